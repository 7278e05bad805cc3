"""Output paths and user model files refused before anything is measured (issue 17).

``scout`` used to measure for minutes and only then find that ``--html`` named a folder;
``report`` read every run first. A ``.keras`` file that is not a zip archive was reported by
Keras as "File not found". Each of these is now one line, exit 2, before TensorFlow starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case


def _stored(tmp: Path) -> None:
    """An existing store, so the refusal is the only line (a new one is announced first)."""
    from gpuscout.store import Store

    with Store(str(tmp / "runs.sqlite")):
        pass


AFILE = {"afile": "a file, not a folder"}
ON_LINUX = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")

CASES = [
    Case(("scout", "--measure", "mlp=1", "--html", "{tmp}"), 2, "is a folder"),
    Case(
        ("scout", "--measure", "mlp=1", "--html", "{tmp}/r.html", "--md", "{tmp}/afile/r.md"),
        2,
        "afile' is a file, not a folder",
        files=AFILE,
    ),
    Case(("scout", "--measure", "mlp=1", "--html", "/dev/null"), 2, "is not a regular file"),
    Case(
        ("scout", "--measure", "mlp=1", "--html", "{tmp}/r", "--md", "{tmp}/r"),
        2,
        "--html and --md both name",
    ),
    Case(("report", "--html", "{tmp}"), 2, "is a folder"),
    Case(("report", "--md", "{tmp}/afile/r.md"), 2, "is a file, not a folder", files=AFILE),
    Case(("report", "--html", "/dev/null"), 2, "is not a regular file"),
    Case(
        ("bench", "--model", "{tmp}/bad.keras"),
        2,
        "is not a readable Keras file",
        files={"bad.keras": "a truncated download"},
        setup=_stored,
    ),
    Case(
        ("predict", "--model", "{tmp}/empty.keras"),
        2,
        "not a zip archive",
        files={"empty.keras": ""},
    ),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


@ON_LINUX
@pytest.mark.parametrize("command", ["scout", "report"])
def test_a_place_that_takes_no_file(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /proc refuses new files even to root, for whom a read-only folder (chmod 555) is writable.
    case = Case((command, "--html", "/proc/gpuscout-report.html"), 2, "takes no new file")
    run_case(case, tmp_path, monkeypatch)


def test_scout_refuses_before_measuring_or_storing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing measured, nothing stored, no TensorFlow, no probe file left beside the target."""
    run_case(Case(("scout", "--html", "{tmp}"), 2, "is a folder"), tmp_path, monkeypatch)
    assert not (tmp_path / "runs.sqlite").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_missing_parent_folders_are_created_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check agrees with the writer, which makes missing folders: this passes the check
    (and then fails on the empty store, the next thing checked) and makes no folder yet."""
    case = Case(("report", "--html", "{tmp}/new/sub/r.html"), 2, "no stored runs", setup=_stored)
    run_case(case, tmp_path, monkeypatch)
    assert not (tmp_path / "new").exists()
