"""What a user's model starts belongs to the measurement: ended with it, after its result is in.

Issue 31: a builder that forked (a data-loader worker) kept ``bench`` waiting after the run was
measured; killed then, the run was never stored and the worker kept running. Every builder here
leaves a process that sleeps for ever, and writes its process group and pids to a file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from gpuscout.core.records import BenchConfig
from gpuscout.measure import runner
from gpuscout.measure.runner import run_isolated
from tests.conftest import leftovers

MODELS = Path(__file__).parent.parent / "data" / "forking_models.py"
FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8")


def left_running(pids_file: Path) -> list[int]:
    """The processes of the measuring child's group still running (zombies are ended: their
    parent, init, reaps them in its own time), given a few seconds to die."""
    pgid, *started = (int(p) for p in pids_file.read_text().split())
    assert started and all(started), "the builder did not start its worker"
    alive: list[int] = []
    for _ in range(50):
        alive = []
        for proc in psutil.process_iter(["pid", "status"]):
            try:
                if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                    alive.append(proc.pid)
            except (ProcessLookupError, psutil.NoSuchProcess):
                continue
        if not alive:
            break
        time.sleep(0.1)
    for pid in started:  # by pid too, in case a worker left the group
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.fixture
def pids_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "pids.txt"
    monkeypatch.setenv("GPUSCOUT_TEST_PIDS", str(path))
    return path


# A builder that leaves a worker running (forks_a_sleeper: the forked worker holds the result
# pipe open; starts_a_worker: a non-daemon thread and a multiprocessing worker keep the child's
# interpreter from exiting) is stored as ok and ended, and one that forks then fails is refused
# with its worker ended: each is a row of tests/adversarial/test_child_rows.py, which checks
# that with left_running() (one TensorFlow start-up per case, not two).


def test_a_forking_builder_that_hangs_is_killed_worker_included(
    pids_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder that forks and never returns: stopped at the build limit (3 s here; counted
    from the start of the build, so a slow TensorFlow import on a loaded machine is not
    mistaken for the hang), its worker ended with it."""
    monkeypatch.setattr(runner, "BUILD_MIN_S", 3.0)
    cfg = BenchConfig(model=f"{MODELS}:forks_then_hangs", batch_size=8, seconds=3)
    result = run_isolated(cfg, stall_s=120)
    assert result.status == "error", result.message
    assert "building the model took more than 3 s" in (result.message or ""), result.message
    assert left_running(pids_file) == []
    assert not leftovers()
