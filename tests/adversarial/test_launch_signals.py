"""Rows for ``gpuscout launch`` (issue 17): a launch with nothing to run is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

MISSING = "launch needs the benchmark to run after '--'"

CASES = [
    # printed the general help and exited 0: the empty command list hid the command's name
    Case(("launch", "--workers", "2"), 2, MISSING),
    Case(("launch", "--workers", "2", "--"), 2, MISSING),
    Case(("launch", "--workers", "2", "--", "doctor"), 2, "launch runs 'bench', got 'doctor'"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
