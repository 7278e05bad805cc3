"""Hostile stored text at every renderer: control characters, bidi overrides and rich markup in
the names, notes, messages and environment of stored runs (issue 17).

The runs are written to a real SQLite store (``Store.save``, as ``bench`` and ``runs import``
do), then every command that shows them runs through the CLI; nothing it prints or writes may
hold a control character other than the layout's own line feeds, a bidi override, or a line
that the stored text forged.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuscout.core.records import Interval, StepTimes, Warmup
from gpuscout.store import Store
from tests.adversarial.table import Case, cases, run_case
from tests.conftest import run_cli
from tests.report.runs import _run

FORGED = "Injected-Header"
DEVICE = f"CPU:0\r\n{FORGED}: x"
WORKLOAD = "mlp\x1b[31mRED\x00\u202eevil\x07"
NOTE = "note\x1b]0;title\x07 \x9b2J \x7f [bold red]x[/] \u2066iso\u2069 \x0b\x0c"
MARKUP = "[bold red]x"
# C0 controls but LF and TAB (the layout's own), DEL, C1, the bidi and line-separator marks.
BAD = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _plant(tmp: Path) -> None:
    """Two runs holding hostile text in every string a user or an import can set."""
    timing = {
        "step_time_s": StepTimes(median=0.01, p5=0.009, p95=0.012, mean=0.0102),
        "warmup": Warmup(steps=3, seconds=0.5, method=f"cusum\x1b[0m{MARKUP}"),
        "stop_reason": "time\r\nInjected-Header: s",
    }
    hostile = _run(
        **timing,
        workload=WORKLOAD,
        device=DEVICE,
        note=NOTE,
        warnings=[f"warn\x1b[5m {MARKUP} \r\n{FORGED}: w"],
        assumptions=[f"assume\x00 {MARKUP}"],
        env={"device_name": f"\x1b[2J{MARKUP}", "hostname": f"h\u202ex\r\n{FORGED}: e"},
        samples_per_second=Interval(median=100.0, ci_low=None, ci_high=None),
    )
    other = _run(**timing, device=MARKUP, precision=f"fp32\x1b[1m{MARKUP}", note=None)
    with Store(tmp / "runs.sqlite") as store:
        store.save_many([hostile, other])


def check_clean(text: str, where: str) -> None:
    """No control character but LF/TAB, no bidi mark, no line the stored text started."""
    found = BAD.search(text)
    assert found is None, f"{where}: {found.group()!r} at {found.start()}: {text[:3000]}"
    forged = [line for line in text.splitlines() if line.lstrip(" │|-*•·").startswith(FORGED)]
    assert not forged, f"{where}: a stored CR/LF forged {forged}"


CASES = [
    Case(("runs", "list"), 0, r"CPU:0\r\nInjected-Head", setup=_plant),
    Case(("runs", "show", "1"), 0, r"mlp\x1b[31mRED\x00\u202eevil\x07", setup=_plant),
    Case(("runs", "show", "2"), 0, MARKUP, setup=_plant),
    Case(("runs", "compare", "1", "2"), 0, MARKUP, setup=_plant),
    # an error quoting what the user typed quotes it escaped
    Case(("runs", "show", "1", "--db", "{tmp}/a\x1b[31m\r\nInjected-Header.db"), 2, r"a\x1b[31m"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_case(case, tmp_path, monkeypatch)
    check_clean(outcome.out + outcome.err, " ".join(case.args))


def test_compare_shows_each_runs_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A result's warnings travel with it: ``runs compare`` lists them as ``runs show`` does."""
    case = Case(("runs", "compare", "1", "2"), 0, "warning (run 1): warn", setup=_plant)
    assert (
        r"warn\x1b[5m [bold red]x \r\nInjected-Header: w"
        in run_case(case, tmp_path, monkeypatch).out
    )


def test_markup_in_stored_text_prints_literally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device named ``[bold red]x`` is printed as those characters, not as a style."""
    out = run_case(Case(("runs", "list"), 0, MARKUP, setup=_plant), tmp_path, monkeypatch).out
    assert MARKUP in out


def test_cli_and_reports_show_escapes_not_controls(tmp_path: Path) -> None:
    """The same store through real subprocesses: the terminal commands, and the HTML and
    Markdown reports, where a NUL or an ESC used to be written raw."""
    _plant(tmp_path)
    db = str(tmp_path / "runs.sqlite")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    for args in (("runs", "list"), ("runs", "show", "1"), ("runs", "compare", "1", "2")):
        res = run_cli(*args, "--db", db, block_tf=True)
        assert res.code == 0, res.err
        check_clean(res.out + res.err, " ".join(args))
    res = run_cli("report", "--db", db, "--html", str(html), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    for path in (html, md):
        text = path.read_text()
        check_clean(text, path.name)
        assert "Injected-Header" in text  # shown, escaped: nothing stored is hidden
    assert r"RED\x00\u202eevil" in html.read_text()
    assert r"RED\\x00\\u202eevil" in md.read_text()  # the backslash escaped for Markdown
