"""Nothing the user's code started outlives a gpuscout that was killed outright (issue 31).

The kernel kills the measuring child when gpuscout dies (``measure.lifeline``), but not what
the child's user code forked: the group guard (``measure.group_guard``) kills the child's
whole process group once the child is gone. Zombies count as gone: init reaps them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from gpuscout.measure.group_guard import guard, start_guard
from tests.conftest import PATIENCE_S, leftovers

MODELS = Path(__file__).parent.parent / "data" / "forking_models.py"
CLI = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` still running."""
    found = []
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(ProcessLookupError, psutil.NoSuchProcess):
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
    return found


def _pids(path: Path, proc: subprocess.Popen[bytes], within_s: float) -> list[int]:
    """``PGID PID...`` as written to ``path``, once written in full."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        words = path.read_text().split() if path.exists() else []
        if len(words) >= 2:
            return [int(w) for w in words]
        if proc.poll() is not None:
            pytest.fail(f"ended with {proc.returncode} before its worker started")
        time.sleep(0.05)
    pytest.fail("the worker never started")


def _kill_and_check(proc: subprocess.Popen[bytes], pgid: int, worker: int) -> None:
    """SIGKILL ``proc``; within a few seconds neither ``worker`` nor anything of the measuring
    group runs. Whatever is left is killed here, so that a failure leaves nothing behind."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        end = time.monotonic() + PATIENCE_S
        while (_running(worker) or _group(pgid)) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _running(worker), "the forked worker outlived the killed gpuscout"
        assert _group(pgid) == []
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)


def test_a_killed_bench_takes_what_the_users_builder_forked_with_it(tmp_path: Path) -> None:
    """The builder forks a worker, then hangs; ``gpuscout bench`` is SIGKILLed meanwhile.
    On JAX: the child's imports cost about 2/3 of TensorFlow's CPU time, and the guard does
    not depend on the backend."""
    pytest.importorskip("jax", reason="pip install 'gpuscout[jax]' (the test extras have it)")
    pids = tmp_path / "pids.txt"
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "bench", "--model", f"{MODELS}:forks_then_hangs",
         "--backend", "jax", "-b", "8", "--steps", "5", "--db", str(tmp_path / "r.db")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "GPUSCOUT_TEST_PIDS": str(pids)},
    )  # fmt: skip
    try:
        pgid, worker = _pids(pids, proc, within_s=PATIENCE_S)
    except BaseException:
        proc.kill()  # and with it the measuring child (its lifeline)
        proc.wait()
        raise
    assert pgid != proc.pid  # the measuring child's own group, not gpuscout's
    _kill_and_check(proc, pgid, worker)
    assert not leftovers()


# A measuring child in miniature: leads its own group, dies with its parent (the test's
# ``parent`` process), starts the guard, forks a worker that sleeps, writes ``PGID PID``.
CHILD = textwrap.dedent(
    """
    import os, sys, time
    from gpuscout.measure.group_guard import guard, start_guard
    from gpuscout.measure.lifeline import die_with_parent
    die_with_parent(os.getppid())
    if sys.argv[2] == "spawned":
        assert start_guard() is not None
    elif os.fork() == 0:  # the guard's own loop, by polling (macOS has no pidfd)
        guard(os.getppid(), use_pidfd=False)
        os._exit(1)
    worker = os.fork()
    if worker == 0:
        time.sleep(3600)
        os._exit(0)
    with open(sys.argv[1], "w") as f:
        f.write(f"{os.getpgrp()} {worker}")
    time.sleep(3600)
    """
)
PARENT = "import subprocess, sys, time\nsubprocess.Popen(sys.argv[1:], start_new_session=True)\n"
PARENT += "time.sleep(3600)\n"


@pytest.mark.parametrize("how", ["spawned", "polling"])
def test_the_guard_ends_the_group_of_a_child_whose_parent_was_killed(
    how: str, tmp_path: Path
) -> None:
    pids = tmp_path / "pids.txt"
    child = [sys.executable, "-c", CHILD, str(pids), how]
    proc = subprocess.Popen([sys.executable, "-c", PARENT, *child])
    try:
        pgid, worker = _pids(pids, proc, within_s=PATIENCE_S)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    _kill_and_check(proc, pgid, worker)


def test_no_guard_outside_a_group_of_its_own() -> None:
    """This test process does not lead its group: a guard here would kill pytest's group."""
    if os.getpgrp() == os.getpid():
        pytest.skip("pytest leads its own process group here")
    assert start_guard() is None
    guard(os.getpid())  # returns at once: this process's group is not led by this process
