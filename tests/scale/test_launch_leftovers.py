"""``gpuscout launch`` leaves no scratch folder behind, however it ends (issue 17: an
interrupted launch left ``gpuscout-launch-*`` with 879 files in the system temp dir).

Each test gives its launcher a private TMPDIR, so that other launches on this machine do not
show, and looks there afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpuscout.scale.launch import LOCK_NAME, sweep_stale
from tests.conftest import PATIENCE_S, leftovers

CLI = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _launcher(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "launch", "--workers", "2", "-q",
         "--db", str(tmp_path / "runs.sqlite"), "--",
         "bench", "--workload", "mlp", "--steps", "100000000", "--batch-size", "16"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(scratch_root)},
    )  # fmt: skip
    return proc, scratch_root


def _scratch_with_workers(proc: subprocess.Popen[bytes], root: Path) -> Path:
    """The launcher's scratch folder, once both workers have started (their logs exist)."""
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"the launcher ended early with {proc.returncode}")
        found = [f for f in root.glob("gpuscout-launch-*") if len(list(f.glob("*.log"))) == 2]
        if found:
            return found[0]
        time.sleep(0.1)
    pytest.fail("the launcher never started its workers")


def test_an_interrupted_launch_removes_its_scratch_folder(tmp_path: Path) -> None:
    proc, root = _launcher(tmp_path)
    _scratch_with_workers(proc, root)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=90) == 1  # the interrupted run is stored, as a failed run
    assert not list(root.glob("gpuscout-launch-*"))
    assert not leftovers()


def test_a_killed_launchers_folder_is_swept_and_a_running_ones_kept(tmp_path: Path) -> None:
    proc, root = _launcher(tmp_path)
    folder = _scratch_with_workers(proc, root)
    assert (folder / LOCK_NAME).exists()
    assert sweep_stale(root) == [] and folder.exists()  # its launcher holds the lock
    everyone = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGKILL)  # no way to clean up on the way out
    proc.wait()
    psutil.wait_procs(everyone, timeout=PATIENCE_S)
    assert folder.exists()
    assert sweep_stale(root) == [folder]  # what the next launch does first
    assert not folder.exists()
    assert not leftovers()


def test_folders_not_made_by_a_launcher_are_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / "gpuscout-launch-olderversion"
    mine.mkdir()
    (mine / "worker0.log").write_text("from a gpuscout without the lock file")
    assert sweep_stale(tmp_path) == []
    assert mine.exists()
