"""Rows for options larger than the job (issue 43): a list of counts is bounded, and an option
with more GPUs than the job has samples, or a global batch larger than the whole job, is
refused in one line instead of being priced."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

MANY = ",".join(str(n) for n in range(1, 2001))
ADVISE = ("advise", "--workload", "resnet50")
CASES = [
    Case((*ADVISE, "--epochs", "1", "--counts", MANY), 2, "2000 different counts given"),
    Case(
        (*ADVISE, "--epochs", "1", "--counts", "100000", "--global-batch", "10000000"),
        2,
        "a global batch of 10,000,000 samples (yours, --global-batch) is more than",
    ),
    Case(
        (*ADVISE, "--samples", "100", "--global-batch", "200"),
        2,
        "a global batch of 200 samples (yours, --global-batch) is more than the whole job's 100",
    ),
    Case((*ADVISE, "--steps", "1", "-b", "1", "--counts", "1,1000"), 2, "1,000 GPUs is more"),
    Case(("predict", "--workload", "mlp", "--count", MANY), 2, "2000 different GPU counts"),
    Case(("bench", "--workload", "mlp", "--batch-sizes", MANY), 2, "2000 different sizes"),
    Case(("bench", "--workload", "mlp", "--concurrency", MANY), 2, "2000 different counts"),
    Case(("bench", "--workload", "mlp", "--scaling", MANY), 2, "2000 different counts given"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
