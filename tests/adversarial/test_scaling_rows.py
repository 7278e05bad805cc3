"""Rows of issue 18: one machine holds at most what its form factor allows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

PREDICT = ("predict", "--workload", "resnet50", "--precision", "mixed_float16")
CASES = [
    Case((*PREDICT, "--gpus", "h100-sxm", "--count", "16"), 2, "--count 2x8"),
    Case((*PREDICT, "--gpus", "h100-sxm", "--count", "1,16"), 2, "an SXM5 board holds 8"),
    Case((*PREDICT, "--gpus", "rtx-4090", "--count", "12"), 2, "assumed at most 8 PCIe cards"),
    Case((*PREDICT, "--gpus", "h100-sxm", "--count", "2x8"), 0, "2x8"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
