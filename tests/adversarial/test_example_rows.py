"""Rows that held before issue 17: the table's own check that it runs and can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

CASES = [
    Case(("soak", "--minutes", "inf"), 2, "must be a finite number"),
    Case(("cost", "--gpu-hours", "1e30"), 2, "at most 1e+09"),
    Case(("runs", "import", "{tmp}"), 2, "is a directory"),
    Case(("specs", "--json"), 0, '"name"'),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_a_wrong_expectation_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AssertionError):
        run_case(Case(("soak", "--minutes", "inf"), 0, "anything"), tmp_path, monkeypatch)
