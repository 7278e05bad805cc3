"""``--backend jax --workers``: JAX over several processes, joined by ``jax.distributed``.

Real JAX in real processes: two workers on loopback ports, the all-reduce between them JAX's
CPU collectives (gloo). Every failure must end within the test's timeout (run_cli raises past
it) and leave no gpuscout process behind. Runs are kept short as in tests/cli/test_scale_cli.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.core.records import BenchConfig, RunResult
from gpuscout.scale import distribute
from tests.conftest import leftovers, run_cli

pytest.importorskip("jax")

QUICK = ("--steps", "6", "--warmup-steps", "2", "--batch-size", "16")


def test_jax_workers_plan_as_jax_distributed_with_deadlines_after_the_parents() -> None:
    config = BenchConfig(backend="jax", workers=["127.0.0.1:1", "127.0.0.1:2"], task_index=1)
    layout = distribute.plan(config)
    assert (layout.strategy, layout.workers[0], layout.is_chief) == (
        distribute.JAX_DISTRIBUTED, "127.0.0.1:1", False
    )  # fmt: skip
    assert distribute.plan(config.model_copy(update={"backend": "tensorflow"})).strategy == (
        distribute.MULTI_WORKER
    )
    # JAX aborts the process when its deadline passes: the parent's (a clear message at
    # --worker-timeout) must come first; heartbeats and the exit barrier get the timeout.
    assert distribute.jax_timeouts(4.2) == {
        "initialization_timeout": 5 + distribute.JAX_CONNECT_MARGIN_S,
        "heartbeat_timeout_seconds": 5,
        "shutdown_timeout_seconds": 5,
    }


# Two JAX processes end to end (jax.distributed, the batch split, every worker's row, the
# shared stop): tests/scale/test_cluster_e2e.py's skypilot-jax case; launch's combined run:
# tests/cli/test_scale_cli.py (one two-process run per case, not two).


def test_a_jax_worker_whose_coordinator_never_comes_fails_after_the_worker_timeout(
    tmp_path: Path,
) -> None:
    """Worker 1 waits for the chief, which listens on the first address: never started."""
    a, b = (f"127.0.0.1:{p}" for p in distribute.free_ports(2))
    r = run_cli(
        "bench", "--backend", "jax", "--workload", "mlp", "--workers", f"{a},{b}",
        "--task-index", "1", "--worker-timeout", "3", *QUICK,
        "--db", str(tmp_path / "runs.sqlite"), "--json",
        timeout=90,
    )  # fmt: skip
    assert r.code == 1
    run = RunResult.model_validate(r.json())
    assert run.status == "error" and run.backend == "jax"
    assert "did not all connect within 3 s" in (run.message or "")
    said = [ln for ln in r.err.splitlines() if ln.startswith("gpuscout:")]
    assert said[-1].startswith("gpuscout: run 1 failed (error): the workers did not all")
    assert "Traceback" not in r.err
    assert not leftovers()
