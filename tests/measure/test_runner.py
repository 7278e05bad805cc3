"""The child-process runner: results come back whole, a hang ends in bounded time."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gpuscout.measure.runner import run_isolated
from gpuscout.records import BenchConfig

DATA = Path(__file__).parent.parent / "data"


def test_result_and_progress_come_back_from_the_child() -> None:
    phases: list[str] = []
    progress: list[object] = []
    cfg = BenchConfig(workload="mlp", batch_size=8, steps=5, warmup_steps=1, seconds=None)
    result = run_isolated(cfg, on_progress=progress.append, on_phase=phases.append)
    assert result.status == "ok" and result.measured_steps == 5
    assert len(result.step_times_s) == 6
    assert "measuring" in phases and progress


def test_a_hung_measurement_is_killed_and_reported() -> None:
    cfg = BenchConfig(model=f"{DATA}/user_models.py:hangs", batch_size=8)
    t0 = time.monotonic()
    result = run_isolated(cfg, stall_s=6)
    assert time.monotonic() - t0 < 60
    assert result.status == "error" and "the measurement hung" in (result.message or "")
    leftover = subprocess.run(
        ["pgrep", "-f", "gpuscout.measure.child"], capture_output=True, text=True
    )
    assert leftover.stdout.strip() == ""
