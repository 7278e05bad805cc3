"""What a user's model starts belongs to the measurement: ended with it, after its result is in.

Issue 31: a builder that forked (a data-loader worker) kept ``bench`` waiting after the run was
measured; killed then, the run was never stored and the worker kept running. Every builder here
leaves a process that sleeps for ever, and writes its process group and pids to a file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import psutil
import pytest

from gpuscout.measure.runner import run_isolated
from gpuscout.records import BenchConfig
from tests.conftest import leftovers, run_cli

MODELS = Path(__file__).parent.parent / "data" / "forking_models.py"
FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8")


def _left_running(pids_file: Path) -> list[int]:
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


@pytest.mark.parametrize("builder", ["forks_a_sleeper", "starts_a_worker"])
def test_a_builder_that_leaves_workers_is_stored_ok_and_leaves_nothing(
    builder: str, pids_file: Path, tmp_path: Path
) -> None:
    """The forked worker holds the result pipe open (``forks_a_sleeper``); a non-daemon thread
    and ``multiprocessing`` worker keep the child's interpreter from exiting
    (``starts_a_worker``). Either way: stored as ok, the command ends, nothing is left."""
    db = tmp_path / "runs.sqlite"
    model = f"{MODELS}:{builder}"
    # run_cli reads the command's stderr to its end: a worker still holding it fails here.
    r = run_cli("bench", "--model", model, *FAST, "--db", str(db), "--json", timeout=120)
    assert r.code == 0, r.err
    assert r.json()["status"] == "ok"
    assert sqlite3.connect(db).execute("select status from runs").fetchall() == [("ok",)]
    assert _left_running(pids_file) == []
    assert not leftovers()


def test_a_forking_builder_that_fails_is_refused_and_its_worker_ended(
    pids_file: Path, tmp_path: Path
) -> None:
    model = f"{MODELS}:forks_then_fails"
    r = run_cli("bench", "--model", model, *FAST, "--db", str(tmp_path / "r.db"), timeout=120)
    assert r.code == 2 and "width must be positive" in r.err, r.err
    assert "Traceback" not in r.err
    assert _left_running(pids_file) == []


def test_a_forking_builder_that_hangs_is_killed_worker_included(pids_file: Path) -> None:
    cfg = BenchConfig(model=f"{MODELS}:forks_then_hangs", batch_size=8)
    result = run_isolated(cfg, stall_s=6)
    assert result.status == "error" and "the measurement hung" in (result.message or "")
    assert _left_running(pids_file) == []
    assert not leftovers()
