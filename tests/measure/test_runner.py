"""The child-process runner: results come back whole, a hang ends in bounded time."""

from __future__ import annotations

import time
from pathlib import Path

from gpuscout.core.records import BenchConfig
from gpuscout.measure.runner import run_isolated
from tests.conftest import leftovers

DATA = Path(__file__).parent.parent / "data"


def test_result_and_progress_come_back_from_the_child() -> None:
    phases: list[str] = []
    progress: list[object] = []
    cfg = BenchConfig(workload="mlp", batch_size=8, steps=5, warmup_steps=1, seconds=None)
    result = run_isolated(cfg, on_progress=progress.append, on_phase=phases.append)
    assert result.status == "ok" and result.measured_steps == 5
    assert len(result.step_times_s) == 6
    assert "measuring" in phases and progress
    # The parent's monitor watched the child: its summary and timeline come with the result.
    m = result.monitor
    assert m is not None and m.window == "the training steps (warm-up included)"
    assert m.process_rss_max_bytes and m.process_rss_max_bytes > 50 * 2**20  # TF is in there
    assert m.notices and "GPU not monitored" in m.notices[0]  # no NVML on this machine
    assert len(result.monitor_timeline["t"]) == len(result.monitor_timeline["rss"])


def test_a_hung_measurement_is_killed_and_reported() -> None:
    cfg = BenchConfig(model=f"{DATA}/user_models.py:hangs", batch_size=8)
    t0 = time.monotonic()
    result = run_isolated(cfg, stall_s=6)
    assert time.monotonic() - t0 < 60
    assert result.status == "error" and "the measurement hung" in (result.message or "")
    assert not leftovers()


def test_memory_growth_is_turned_on_for_every_gpu() -> None:
    """A fake ``tf`` module: memory growth exists only on GPUs, and this machine has none."""
    from types import SimpleNamespace

    from gpuscout.measure.backends.tensorflow.runtime import enable_memory_growth

    grown: list[str] = []

    def set_memory_growth(gpu: str, on: bool) -> None:
        if gpu == "GPU:1":
            raise RuntimeError("Physical devices cannot be modified after being initialized")
        grown.append(gpu)

    fake = SimpleNamespace(
        config=SimpleNamespace(
            list_physical_devices=lambda kind: ["GPU:0", "GPU:1"],
            experimental=SimpleNamespace(set_memory_growth=set_memory_growth),
        )
    )
    assert enable_memory_growth(fake) is False  # GPU:1 was already initialised: said
    assert grown == ["GPU:0"]
