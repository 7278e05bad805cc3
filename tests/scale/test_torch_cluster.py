"""``bench --backend torch --cluster``: PyTorch's DistributedDataParallel over the workers the
cluster layer read, end to end, on gloo between two local processes.

As ``test_cluster_e2e.py`` does for TensorFlow and JAX: two real ``gpuscout bench`` processes
given the variables Slurm gives two tasks under ``srun``, and nothing else; everything after
them is the real code (the resolver, ``torch.distributed``, DDP, the store). Then the step
itself, in two processes joined by :mod:`gpuscout.measure.backends.torch.distributed`: after a
few steps on different rows, both ranks hold the very parameters one process gets training the
whole global batch, which only an all-reduce of the gradients gives (the same model trained
without the wrapper drifts apart, the control).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuscout.cli.cluster_args import refuse_torchrun
from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult
from gpuscout.measure.backends.torch.distributed import local_rank
from gpuscout.store import Store
from tests.conftest import PATIENCE_S, assert_user_errors, leftovers
from tests.scale.test_cluster_e2e import (
    MANAGERS,
    MLP_GRADIENT_BYTES,
    _joined,
    finish,
    free_port_pair,
    slurm,
    start,
)

pytest.importorskip("torch")
TORCH = ("--backend", "torch", "--steps", "10")  # after QUICK's: the later value wins


def test_two_slurm_tasks_train_one_model_with_ddp_and_store_one_run_with_two_workers(
    tmp_path: Path,
) -> None:
    port = free_port_pair()
    db = tmp_path / "runs.sqlite"
    args = ("--cluster", "slurm", "--port-base", str(port), *TORCH, "--worker-timeout", "60")
    results = finish([start(slurm(i), db, *args) for i in range(2)], 4 * PATIENCE_S)
    for code, _, err in results:
        assert code == 0, err
    assert "worker 1: not stored here; its row is in the chief's run" in results[1][2]
    chief = RunResult.model_validate_json(results[0][1])
    worker = RunResult.model_validate_json(results[1][1])
    with Store(db) as store:
        (row,) = store.list()  # one stored run, by the chief, over both workers
        stored = store.get(row.id)
    assert stored.distribution == chief.distribution and row.device == "2 workers x CPU:0"
    spread = chief.distribution
    assert spread is not None and chief.status == "ok" and chief.backend == "torch"
    assert spread.strategy == "DistributedDataParallel"
    assert (spread.workers, spread.replicas, spread.global_batch) == (2, 2, 32)
    assert (spread.per_replica_batch, chief.batch_size) == (16, 32)  # 16 rows each, 32 a step
    assert chief.config.workers == [f"localhost:{port}", f"localhost:{port + 1}"]
    assert chief.measured_steps == 10 and len(stored.step_times_s) == 12  # warm-up included
    said = " ".join(chief.assumptions)
    assert "DistributedDataParallel over torch.distributed (gloo)" in said
    assert "batch 16 per replica, 32 global" in said and "MASTER_ADDR:MASTER_PORT" in said
    rows = spread.worker_runs
    assert [(w.task_index, w.status, w.address) for w in rows] == [
        (0, "ok", f"localhost:{port}"),
        (1, "ok", f"localhost:{port + 1}"),
    ]
    for w, own in zip(rows, (chief, worker), strict=True):
        assert own.samples_per_second and w.samples_per_second
        assert w.samples_per_second == pytest.approx(own.samples_per_second.median)
        assert w.env == own.env and w.env["torch_distributed"] == "gloo" and w.env["torch"]
    assert worker.distribution and worker.distribution.row_sent and not spread.row_sent
    assert worker.distribution.worker_runs == []  # the rows are the chief's only
    for d in (spread, worker.distribution):  # the network the run saw, on both ranks
        assert d.gradient_bytes == d.allreduce_bytes == MLP_GRADIENT_BYTES
        assert d.allreduce_s and d.allreduce_s > 0 and d.allreduce_busbw_gb_per_s
    assert not leftovers()


def test_a_killed_rank_ends_the_chief_in_one_line(tmp_path: Path) -> None:
    """SIGKILL rank 1 once it holds its connection to the chief's store: the chief's next
    collective fails (gloo sees the peer's connection close; --worker-timeout bounds it
    otherwise), and its run is stored as failed, said in one line, no traceback."""
    port, timeout_s = free_port_pair(), 10
    args = ("--cluster", "slurm", "--port-base", str(port), "--worker-timeout", str(timeout_s))
    forever = (*TORCH, "--steps", "1000000")
    procs = [start(slurm(i), tmp_path / f"r{i}.sqlite", *args, *forever) for i in range(2)]
    try:
        assert _joined(procs[1], port, within=PATIENCE_S), "rank 1 never connected"
        killed_at = time.monotonic()
        procs[1].send_signal(signal.SIGKILL)
        (code, out, err), _ = finish(procs, timeout=timeout_s + PATIENCE_S)
        took = time.monotonic() - killed_at
    finally:
        finish(procs, timeout=1)
    assert code == 1, err
    run = RunResult.model_validate_json(out)
    assert run.status == "error" and run.message and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"gpuscout: run {run.id} failed (error): ")
    assert took < timeout_s + PATIENCE_S, took
    assert not leftovers()


# The step in two processes: rank r trains rows r x 16 .. of one global batch of 32, through
# gpuscout's join/wrap/step; rank 0 also trains the whole batch in one process, and both train
# a control model without the wrapper. Each prints its parameters after 3 steps as JSON. No
# dropout, and plain SGD (the update linear in the gradient): one process's whole-batch step
# is then what DDP's averaged gradients must give, up to float32 rounding.
STEP = """
import json, sys, types
import keras, torch
from gpuscout.measure.backends.keras.seeding import seed_keras
from gpuscout.measure.backends.torch import distributed as ddp
from gpuscout.measure.backends.torch.step import train_step
from gpuscout.scale.distribute import Plan

rank, port = int(sys.argv[1]), int(sys.argv[2])
data = torch.Generator().manual_seed(0)
x, y = torch.randn(32, 12, generator=data), torch.randint(0, 5, (32,), generator=data)
plan = Plan("DistributedDataParallel", workers=(f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"),
            task_index=rank)
group = ddp.join(torch, plan, "cpu", 60.0, lambda phase: None)

def trained(rows, wrap):
    seed_keras(keras, 0)
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="tanh"),
                              keras.layers.Dense(5)])
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    built = types.SimpleNamespace(model=model, loss=loss, optimizer=keras.optimizers.SGD(0.5))
    call = ddp.wrap(torch, built.model, group) if wrap else None
    step = train_step(torch, built, "fp32", call=call)
    for _ in range(3):
        step(*rows)
    return [v.value.detach().reshape(-1).tolist() for v in built.model.trainable_variables]

own = ddp.rows_of((x, y), group, 16, keras)
out = {"ddp": trained(own, True), "control": trained(own, False)}
if rank == 0:
    out["whole"] = trained((x, y), False)
ddp.leave()
print(json.dumps(out))
"""


def test_the_ddp_step_averages_the_gradients_over_the_ranks() -> None:
    port = free_port_pair()
    env = {k: v for k, v in os.environ.items() if not k.startswith(MANAGERS)}
    env["KERAS_BACKEND"] = "torch"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STEP, str(rank), str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    results = finish(procs, timeout=2 * PATIENCE_S)
    for code, _, err in results:
        assert code == 0, err
    zero, one = (json.loads(out.strip().splitlines()[-1]) for _, out, _ in results)

    def flat(params: list[list[float]]) -> list[float]:
        return [v for p in params for v in p]

    # Every rank holds what one process gets from the whole batch: the mean of both ranks'
    # gradients was applied on each (float32 sums in another order: not bit for bit).
    assert flat(zero["ddp"]) == pytest.approx(flat(zero["whole"]), rel=1e-4, abs=1e-6)
    assert flat(one["ddp"]) == pytest.approx(flat(zero["whole"]), rel=1e-4, abs=1e-6)
    # Without the wrapper each rank follows its own rows: the check above could fail.
    assert flat(zero["control"]) != pytest.approx(flat(one["control"]), rel=1e-4, abs=1e-6)


def test_local_rank_is_the_workers_before_this_one_on_its_host() -> None:
    workers = ("a:7000", "a:7001", "b:7000", "[::1]:7000", "a:7002", "[::1]:7001")
    assert [local_rank(workers, r) for r in range(6)] == [0, 1, 0, 0, 2, 1]


def test_cluster_auto_under_torchrun_is_refused_not_run_as_one_process_per_rank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torchrun = {"TORCHELASTIC_RUN_ID": "none", "RANK": "1", "WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}  # fmt: skip
    with pytest.raises(UserError, match=r"--cluster auto under torchrun \(.*RANK='1'"):
        refuse_torchrun(torchrun)
    refuse_torchrun({"RANK": "1"})  # no torchrun: nothing to refuse
    for name in [k for k in os.environ if k.startswith(MANAGERS)]:
        monkeypatch.delenv(name)
    for name, value in torchrun.items():
        monkeypatch.setenv(name, value)
    assert_user_errors(  # through the command, where auto found no other source
        [(("bench", "--backend", "torch", "--cluster", "auto"), "--cluster auto under torchrun")]
    )
