"""The time estimator predicts only machines ``cloud plan`` would plan: no more GPUs in one
machine than its form factor holds (16 H100s are two machines, not one)."""

from __future__ import annotations

import json

import pytest

from gpuscout.cloud import time_estimator
from gpuscout.core.errors import UserError
from gpuscout.predict.job import JobSpec
from tests.conftest import run_in_process


def test_more_gpus_than_one_machine_holds_are_not_predicted() -> None:
    est = time_estimator(JobSpec(workload="resnet50", epochs=1))
    assert est.seconds("H100", 8) > 0
    with pytest.raises(UserError, match=r"H100:16: one h100-sxm machine holds at most 8"):
        est.seconds("H100", 16)
    lenient = time_estimator(JobSpec(workload="resnet50", epochs=1), fallback_seconds=3600)
    assert lenient.seconds("L4", 16) == 3600


def test_the_estimator_command_says_why_sixteen_are_not_predicted() -> None:
    r = run_in_process("cloud", "estimator", "--workload", "resnet50", "--epochs", "1",
                       "--count", "16", "--json")  # fmt: skip
    assert r.code == 0, r.err
    rows = {row["skypilot"]: row for row in json.loads(r.out)}
    assert rows["H100"]["seconds"] is None
    assert "one h100-sxm machine holds at most 8" in rows["H100"]["not_predicted"]
