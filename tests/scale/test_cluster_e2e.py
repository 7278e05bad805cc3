"""``bench --cluster`` end to end: two real ``gpuscout bench`` processes on loopback, given the
variables a cluster manager would give two of its tasks, and nothing else.

No real SkyPilot or Slurm is used (none runs here): the environments are what each documents
for a task (SkyPilot: ``SKYPILOT_NODE_IPS`` one per line, ``SKYPILOT_NODE_RANK``,
``SKYPILOT_NUM_NODES``; Slurm under ``srun``: ``SLURM_JOB_NODELIST``, ``SLURM_NTASKS``,
``SLURM_PROCID``, ``SLURM_NTASKS_PER_NODE``), and everything after them is the real code:
the resolver, TensorFlow's MultiWorkerMirroredStrategy or ``jax.distributed``, the store.
TF_CONFIG is covered by launch's tests (tests/cli/test_scale_cli.py,
tests/measure/test_jax_workers.py). The two ranks of a test run at once, as short as a
multi-worker run can be: the suite is at its time limit.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from gpuscout.core import articles
from gpuscout.core.records import Distribution, RunResult
from gpuscout.core.units import fmt_percent, fmt_seconds
from gpuscout.measure import network
from gpuscout.predict.scaling import allreduce_seconds
from gpuscout.report.terminal import network_rows
from gpuscout.store import Store
from tests.conftest import leftovers, run_in_process

MAIN = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
QUICK = ("--workload", "mlp", "--steps", "30", "--warmup-steps", "2", "--batch-size", "16")
MANAGERS = ("SLURM_", "SKYPILOT_", "TF_CONFIG")
# The seed MLP's trainable variables (two Dense layers, kernels and biases), float32.
MLP_GRADIENT_BYTES = 4 * (
    articles.SEED_MLP_INPUTS * articles.SEED_MLP_HIDDEN
    + articles.SEED_MLP_HIDDEN
    + articles.SEED_MLP_HIDDEN * articles.SEED_MLP_CLASSES
    + articles.SEED_MLP_CLASSES
)


def skypilot(rank: int) -> dict[str, str]:
    return {
        "SKYPILOT_NODE_IPS": "127.0.0.1\n127.0.0.1",
        "SKYPILOT_NODE_RANK": str(rank),
        "SKYPILOT_NUM_NODES": "2",
    }


def slurm(rank: int) -> dict[str, str]:
    return {
        "SLURM_JOB_NODELIST": "localhost",
        "SLURM_NTASKS": "2",
        "SLURM_PROCID": str(rank),
        "SLURM_NTASKS_PER_NODE": "2",
    }


def free_port_pair() -> int:
    """A port P with P and P + 1 free: worker i of two on one host listens on P + i."""
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return int(port)
    raise AssertionError("no two consecutive free ports on loopback")


def start(rank_env: dict[str, str], db: Path, *args: str) -> subprocess.Popen[str]:
    """One rank: ``gpuscout bench ARGS --db DB --json`` with the manager's variables only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(MANAGERS)}
    return subprocess.Popen(
        [sys.executable, "-c", MAIN, "bench", *QUICK, *args, "--db", str(db), "--json"],
        env={**env, **rank_env, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(procs: list[subprocess.Popen[str]], timeout: float) -> list[tuple[int, str, str]]:
    """Wait for every rank (killing all of them past ``timeout``): (code, stdout, stderr)."""
    deadline = time.monotonic() + timeout
    done = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            done.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return done


@pytest.mark.parametrize(
    ("manager", "backend"),
    [(skypilot, "tensorflow"), (skypilot, "jax"), (slurm, "tensorflow")],
    ids=["skypilot-tensorflow", "skypilot-jax", "slurm-tensorflow"],
)
def test_two_ranks_of_a_cluster_manager_store_one_run_with_two_workers(
    tmp_path: Path, manager: Callable[[int], dict[str, str]], backend: str
) -> None:
    """Both ranks end ok; the chief's store holds one run over 2 workers, with the network
    the run saw, shown by ``runs show`` beside the scaling model's all-reduce for it, and
    every worker's row."""
    if backend == "jax":
        pytest.importorskip("jax")
    port = free_port_pair()
    # Both ranks given one store, as a team store would be (--db D on every node): the
    # measurement is stored once, by the chief; the other rank's row is in it.
    db = tmp_path / "runs.sqlite"
    args = ("--cluster", manager.__name__, "--port-base", str(port), "--backend", backend)
    procs = [start(manager(i), db, *args, "--worker-timeout", "60") for i in range(2)]
    results = finish(procs, timeout=240)
    for code, _, err in results:
        assert code == 0, err
    assert "worker 1: not stored here; its row is in the chief's run" in results[1][2]
    chief = RunResult.model_validate_json(results[0][1])
    with Store(db) as store:
        (row,) = store.list()  # one stored run, over two workers
        stored = store.get(row.id)
        assert len(stored.step_times_s) == 32  # the chief's, warm-up included
    assert stored.distribution == chief.distribution and row.device == "2 workers x CPU:0"
    spread = chief.distribution
    assert spread is not None and chief.status == "ok" and chief.backend == backend
    assert (spread.workers, spread.replicas, spread.global_batch) == (2, 2, 32)
    # the global batch is split: 16 rows on each worker's device, 32 a step in all
    assert (spread.per_replica_batch, chief.batch_size) == (16, 32)
    assert spread.devices == ["CPU:0"] and not spread.logical_devices
    strategy = "jax.distributed" if backend == "jax" else "MultiWorkerMirroredStrategy"
    assert spread.strategy == strategy
    if backend == "jax":
        assert any("stop decision is shared" in a for a in chief.assumptions)
    host = "localhost" if manager is slurm else "127.0.0.1"  # as each manager names it
    assert chief.config.workers == [f"{host}:{port}", f"{host}:{port + 1}"]
    assert chief.config.task_index == 0 and chief.measured_steps == 30
    worker = RunResult.model_validate_json(results[1][1])
    assert worker.config.task_index == 1 and worker.distribution
    assert worker.distribution.workers == 2
    # Every worker's own row, sent to the chief over the run's collectives (no shared disk):
    # each with its own speed and environment, as its own stored run has them.
    rows = spread.worker_runs
    assert [(w.task_index, w.status) for w in rows] == [(0, "ok"), (1, "ok")]
    assert [w.address for w in rows] == chief.config.workers
    for w, own in zip(rows, (chief, worker), strict=True):
        assert own.samples_per_second and w.samples_per_second and w.samples_per_second > 0
        assert w.samples_per_second == pytest.approx(own.samples_per_second.median)
        assert w.env == own.env and w.env["hostname"] and w.env[backend]
    assert worker.distribution.worker_runs == []  # the rows are the chief's only
    assert worker.distribution.row_sent and not spread.row_sent
    # The network the run saw: an all-reduce of the gradients' size, on both ranks.
    for d in (spread, worker.distribution):
        assert d.gradient_bytes == d.allreduce_bytes == MLP_GRADIENT_BYTES
        assert d.allreduce_s and d.allreduce_s > 0
        assert d.allreduce_busbw_gb_per_s == pytest.approx(
            2 * (2 - 1) / 2 * MLP_GRADIENT_BYTES / d.allreduce_s / 1e9
        )
    shown = run_in_process("runs", "show", str(row.id), "--db", str(db))
    assert shown.code == 0, shown.err
    flat = " ".join(shown.out.split())
    assert "as measured between these workers" in flat and "GB/s bus bandwidth" in flat
    assert "scaling model" in flat and "of the measured" in flat
    assert "worker 1" in flat and "samples/s as it saw it" in flat
    assert not leftovers()


def test_a_killed_rank_ends_the_other_within_the_worker_timeout(tmp_path: Path) -> None:
    """SIGKILL rank 1 once both have joined (rank 1's measuring process holds a connection to
    the chief's port; by then the chief is in its first collectives or its steps): the chief's
    collective aborts (TensorFlow's heartbeats, or --worker-timeout per collective), its run
    is stored as failed, and no process of either rank is left. The bound allows for
    TensorFlow's teardown and the store on a loaded 2-core machine (13 s here with a 5 s
    timeout). The timeout is 10 s: both ranks must reach the connect step within it of each
    other, and on a slower CPU with a heavy job beside them TensorFlow's import can lag that."""
    port, timeout_s = free_port_pair(), 10
    args = ("--cluster", "slurm", "--port-base", str(port), "--worker-timeout", str(timeout_s))
    steps = ("--steps", "100000")  # the later value wins: it runs until rank 1 is killed
    procs = [start(slurm(i), tmp_path / f"rank{i}.sqlite", *args, *steps) for i in range(2)]
    try:
        assert _joined(procs[1], port, within=120), "rank 1 never connected to the chief"
        killed_at = time.monotonic()
        procs[1].send_signal(signal.SIGKILL)
        (code, out, err), _ = finish(procs, timeout=timeout_s + 120)
        took = time.monotonic() - killed_at
    finally:
        finish(procs, timeout=1)
    assert code == 1, err
    run = RunResult.model_validate_json(out)
    assert run.status == "error" and run.message and "Traceback" not in err
    # --worker-timeout bounds each collective; the rest is TensorFlow's teardown and the store
    assert took < timeout_s + 60, took
    assert not leftovers()


def _joined(rank: subprocess.Popen[str], chief_port: int, within: float) -> bool:
    """Whether ``rank``'s measuring process holds an open connection to the chief's port
    (TensorFlow's workers connect when the strategy starts), waiting up to ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and rank.poll() is None:
        for child in psutil.Process(rank.pid).children(recursive=True):
            try:
                links = child.net_connections(kind="tcp")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if any(c.raddr and c.raddr.port == chief_port and c.status == "ESTABLISHED"
                   for c in links):  # fmt: skip
                time.sleep(1)  # past the handshake, into the steps' collectives
                return True
        time.sleep(0.2)
    return False


# The network figures themselves, in process (milliseconds): the formula, the cap, the rows.


def test_bus_bandwidth_is_nccls_and_the_buffer_is_capped() -> None:
    # nccl-tests' all-reduce busbw: 2 (n-1)/n x bytes / time
    assert network.bus_bandwidth(8_000, 4, 1e-3) == pytest.approx(2 * 3 / 4 * 8_000 / 1e-3)
    assert network.bus_bandwidth(8_000, 1, 1e-3) == 0.0
    assert network.buffer_elements(MLP_GRADIENT_BYTES) * 4 == MLP_GRADIENT_BYTES
    assert network.buffer_elements(10 * network.CAP_BYTES) * 4 == network.CAP_BYTES
    got = network.fields(4_000_000, 1_000, 2, [3.0, 1.0, 2.0])
    assert got == {
        "gradient_bytes": 4_000_000,
        "allreduce_bytes": 4_000,
        "allreduce_s": 2.0,
        "allreduce_busbw_gb_per_s": pytest.approx(4_000 / 2.0 / 1e9),
    }


def test_a_run_shows_its_network_beside_the_scaling_models_allreduce_for_it() -> None:
    old = {  # a run stored before the network was measured: still loads, shows none
        "strategy": "MultiWorkerMirroredStrategy", "replicas": 16, "devices": ["GPU:0"],
        "logical_devices": False, "workers": 2, "per_replica_batch": 32, "global_batch": 512,
    }  # fmt: skip
    before = Distribution.model_validate(old)
    assert before.allreduce_busbw_gb_per_s is None and network_rows(before, 0.1) == []
    gradients = 100 * 2**20
    d = Distribution.model_validate(
        {**old, **network.fields(gradients, network.buffer_elements(gradients), 16, [0.02])}
    )
    rows = dict(network_rows(d, 0.1))
    bw = d.allreduce_busbw_gb_per_s
    assert bw is not None and rows["network"].startswith(f"{bw:.3g} GB/s bus bandwidth, as ")
    assert "as measured between these workers" in rows["network"]
    assert "64 MiB over 16 replicas took 20 ms" in rows["network"]
    expected = allreduce_seconds(gradients, 16, bw)  # the gradients', not the capped buffer's
    assert (
        f"takes {fmt_seconds(expected)}, {fmt_percent(expected / 0.1)} of the measured"
        in (rows["scaling model"])
    )
    assert "100 MiB over 16 replicas" in rows["scaling model"]
