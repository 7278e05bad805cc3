"""Scale-out end to end, as users run it: logical CPU devices, local workers, failure paths.

Real TensorFlow in real processes: MirroredStrategy over logical CPU devices, and
MultiWorkerMirroredStrategy over workers on loopback ports. Every failure must end within the
test's timeout (run_cli raises past it: those run in a fresh interpreter) and leave no gpuscout
process behind. A run expected to succeed runs in this process (``run_in_process``: a fresh
interpreter for the command itself cost a second more); what it starts (the measuring
children, the launched workers) are real processes.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from rich.console import Console

from gpuscout.core.records import RunResult
from gpuscout.report.scaling_table import print_sweep
from gpuscout.store import Store
from tests.conftest import (
    PATIENCE_S,
    CliResult,
    assert_user_errors,
    leftovers,
    run_cli,
    run_in_process,
)

MODELS = Path(__file__).parent.parent / "data" / "user_models.py"
QUICK = ("--steps", "12", "--warmup-steps", "2", "--batch-size", "16")


def _run(*args: str) -> CliResult:
    """``gpuscout ARGS`` in this process; its measuring children and workers are real."""
    return run_in_process(*args, stderr_file=True)


def test_scaling_over_logical_devices_accounts_for_the_global_batch(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    r = _run(
        "bench", "--workload", "mlp", "--devices", "2", "--scaling", "1,2", *QUICK,
        "--db", str(db), "--json", "--note", "sweep",
    )  # fmt: skip
    assert r.code == 0, r.err
    one, two = (RunResult.model_validate(x) for x in r.json())
    for run, n in ((one, 1), (two, 2)):
        spread = run.distribution
        assert spread is not None and run.samples_per_second and run.step_time_s
        assert (spread.strategy, spread.replicas) == ("MirroredStrategy", n)
        assert spread.devices == [f"CPU:{i}" for i in range(n)]
        assert spread.logical_devices == (n > 1)
        assert (spread.per_replica_batch, spread.global_batch) == (16, 16 * n)
        assert run.batch_size == 16 * n  # samples/s count the global batch ...
        sps = run.samples_per_second.median
        assert sps == pytest.approx(16 * n / run.step_time_s.median)  # ... per step time
        assert any("per replica" in a for a in run.assumptions)
    assert one.note == two.note == "sweep"
    assert one.distribution and one.distribution.scaling
    assert one.distribution.scaling.efficiency is None  # the base of the sweep
    assert two.distribution and two.distribution.scaling
    scaling = two.distribution.scaling
    assert scaling.base_run_id == one.id and scaling.sweep == one.distribution.scaling.sweep
    assert one.samples_per_second and two.samples_per_second and scaling.efficiency
    expected = two.samples_per_second.median / (2 * one.samples_per_second.median)
    assert scaling.efficiency.median == pytest.approx(expected)
    with Store(db) as store:  # each count is stored, efficiency included
        assert [row.device for row in store.list()] == ["CPU:0,CPU:1", "CPU:0"]
        assert store.get(two.id or 0).distribution == two.distribution
    out = io.StringIO()
    print_sweep([one, two], Console(file=out, width=200))
    assert "scaling efficiency" in out.getvalue() and f"{expected:.1%}" in out.getvalue()
    assert not leftovers()


def test_launch_runs_two_workers_and_stores_one_combined_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    r = _run(
        "launch", "--workers", "2", "--db", str(db), "--json", "--note", "loopback <b>test</b>",
        "--", "bench", "--workload", "mlp", *QUICK,
    )  # fmt: skip
    assert r.code == 0, r.err
    run = RunResult.model_validate(r.json())
    spread = run.distribution
    assert spread is not None and run.samples_per_second
    assert (spread.strategy, spread.workers, spread.replicas) == (
        "MultiWorkerMirroredStrategy", 2, 2
    )  # fmt: skip
    assert (spread.per_replica_batch, spread.global_batch, run.batch_size) == (16, 32, 32)
    assert run.measured_steps == 12 and run.config.task_index == 0
    assert run.note == "loopback <b>test</b>"
    assert [w.task_index for w in spread.worker_runs] == [0, 1]
    assert all(w.status == "ok" and w.env.get("tensorflow") for w in spread.worker_runs)
    assert spread.worker_runs[0].samples_per_second == run.samples_per_second.median
    with Store(db) as store:
        (row,) = store.list()
        assert row.device == "2 workers x CPU:0"
        assert len(store.get(row.id).step_times_s) >= 14  # the chief's, warm-up included
    assert not leftovers()


def test_a_crashed_worker_fails_the_launch_in_bounded_time(tmp_path: Path) -> None:
    # --worker-timeout 10: worker 0 waits that long at the connect step for worker 1, whose
    # TensorFlow import can lag behind on a slow CPU with a heavy job beside (5 s left little
    # room: worker 0 failing first would make the cause "did not all connect")
    r = run_cli(
        "launch", "--workers", "2", "--db", str(tmp_path / "runs.sqlite"), "--json", "--",
        "bench", "--model", f"{MODELS}:dies_on_worker_1", *QUICK, "--worker-timeout", "10",
        timeout=150,
    )  # fmt: skip
    assert r.code == 1
    run = RunResult.model_validate(r.json())
    assert run.status == "error" and run.message
    assert run.message.startswith("worker 1 (127.0.0.1:"), run.message  # the cause first
    assert "exited with code 3" in run.message
    assert not leftovers()


def test_a_worker_that_never_connects_fails_after_the_worker_timeout(tmp_path: Path) -> None:
    a, b = (f"127.0.0.1:{p}" for p in _free_ports(2))
    r = run_cli(
        "bench", "--workload", "mlp", "--workers", f"{a},{b}", "--task-index", "0",
        "--worker-timeout", "5", *QUICK, "--db", str(tmp_path / "runs.sqlite"), "--json",
        timeout=180,
    )  # fmt: skip
    assert r.code == 1
    run = RunResult.model_validate(r.json())
    assert run.status == "error"
    assert "did not all connect within 5 s" in (run.message or "")
    assert not leftovers()


def _free_ports(n: int) -> list[int]:
    from gpuscout.scale.distribute import free_ports

    return free_ports(n)


def test_bad_scale_out_options_fail_fast_without_tensorflow() -> None:
    """As bad input: one line, exit 2 (the rest of the rules: tests/measure/test_distribute)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        workers = f"127.0.0.1:{port},127.0.0.1:{port + 1}"
        assert_user_errors(
            [
                (("bench", "--workers", workers, "--task-index", "0"), f"port {port}"),
                (("bench", "--devices", "2", "--scaling", "1,4"), "beyond the 2"),
                (("bench", "--devices", "3", "--global-batch-size", "8"), "evenly over 3"),
                (("launch", "--workers", "2", "--", "doctor"), "launch runs 'bench'"),
                (("launch", "--workers", "2", "--", "bench", "--db", "x"), "'--db' after"),
            ]
        )


def test_the_measuring_process_dies_with_a_killed_bench(tmp_path: Path) -> None:
    """A SIGKILLed ``gpuscout bench`` (which can forward nothing) takes its TensorFlow child
    with it: nothing else would stop a worker blocked in a collective."""
    code = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    env = {**os.environ, "GPUSCOUT_DB": str(tmp_path / "runs.sqlite")}
    parent = subprocess.Popen(
        [sys.executable, "-c", code, "bench", "--workload", "mlp", "--steps", "100000000", "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    children: list[psutil.Process] = []
    while not children and time.monotonic() < deadline:
        children = psutil.Process(parent.pid).children()
        time.sleep(0.2)
    assert children, "the measuring child never started"
    time.sleep(2)  # let it get into TensorFlow
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    _, alive = psutil.wait_procs(children, timeout=PATIENCE_S)
    assert not alive and not leftovers()
