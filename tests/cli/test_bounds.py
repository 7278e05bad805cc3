"""Requests that cannot fit are refused up front; nothing gpuscout starts outlives it.

Refusals must import no TensorFlow (assert_user_errors checks it): they must come before any
worker starts or any step is traced. The process tests are real: a launcher SIGKILLed
mid-collective, a model builder that never returns, a reader that closes the pipe.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.limits import MAX_WORKERS, WORKER_BYTES, activation_floor, check_workers
from gpuscout.core.records import RunResult
from tests.conftest import PATIENCE_S, assert_user_errors, leftovers, run_in_process

BARE = Path(__file__).parent.parent / "data" / "bare_builders.py"
PROFILES = Path(__file__).parents[2] / "src" / "gpuscout" / "predict" / "data" / "profiles.json"
CLI = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def test_requests_that_cannot_fit_or_mean_nothing_are_refused_in_one_line(
    tmp_path: Path,
) -> None:
    assert_user_errors(
        [
            (("launch", "--workers", "1000", "--", "bench", "--workload", "mlp"),
             "--workers 1000"),
            (("predict", "--workload", "resnet50", "-b", "100000000", "--gpus", "4090"),
             "more than the largest GPU in the catalog"),
            (("predict", "--workload", "resnet50", "-b", "100000000", "--mode", "inference"),
             "in its largest layer output"),
            (("predict", "--workload", "bert-base", "--seq-len", "1000000"),
             "lower --seq-len"),
            (("memory", "--workload", "resnet50", "--gpu", "t4", "-b", "100000"),
             "lower --batch-size"),
            (("memory", "--workload", "bert-base", "--gpu", "t4", "--seq-len", "1000000"),
             "sequence length 1,000,000"),
            (("memory", "--workload", "mlp", "--seq-len", "100"), "has no setting 'seq_len'"),
            (("cost", "--gpu-hours", "1e30"), "at most 1e+09"),
            (("cost", "--workload", "resnet50", "--epochs", "1e300"), "at most 1e+06"),
            (("runs", "import", str(tmp_path)), "is a directory"),
            (("runs", "import", ""), "the name is empty"),
            (("report", "--epochs", "inf"), "must be a finite number"),
            (("advise", "--workload", "mlp", "--epochs", "nan"), "must be a finite number"),
            (("soak", "--minutes", "inf"), "must be a finite number"),
            (("soak", "--minutes", "20000"), "at most 10080"),
            (("bench", "--seconds", "inf"), "must be a finite number"),
        ]
    )  # fmt: skip


def test_launch_names_the_override_and_how_many_workers_fit() -> None:
    """In this process, without TensorFlow (assert_user_errors): before any worker starts."""
    launch = ("launch", "--workers", "1000")
    assert_user_errors(
        [
            ((*launch, "--", "bench", "--workload", "mlp"), "--force"),
            ((*launch, "--", "bench", "--workload", "mlp"), "at most"),
            ((*launch, "--force", "--", "bench"), f"at most {MAX_WORKERS} workers"),
        ]
    )


def test_workers_are_held_to_memory_first_then_to_the_cores() -> None:
    with pytest.raises(UserError, match="at most 10 workers") as memory:
        check_workers(11, available_bytes=10.5 * WORKER_BYTES, cores=64)
    assert "of memory" in memory.value.problem
    with pytest.raises(UserError) as both:  # what it suggests passes the core check too
        check_workers(26, available_bytes=24.5 * WORKER_BYTES, cores=2)
    assert both.value.fix and "at most 8 workers" in both.value.fix
    with pytest.raises(UserError, match=r"on 2 CPU core\(s\)") as cores:
        check_workers(9, available_bytes=100 * WORKER_BYTES, cores=2)
    assert cores.value.fix and "at most 8 workers" in cores.value.fix
    check_workers(8, available_bytes=8 * WORKER_BYTES, cores=2)  # exactly fits
    check_workers(9, available_bytes=WORKER_BYTES, cores=2, force=True)  # the user's call
    with pytest.raises(UserError, match=f"at most {MAX_WORKERS} workers on one machine"):
        check_workers(MAX_WORKERS + 1, available_bytes=1e15, cores=1024, force=True)


def test_the_activation_floor_stays_below_every_traced_step() -> None:
    """The refusal is only safe if the analytic figure never exceeds what the step really
    keeps (the HLO-traced profiles); it is only useful if it is not far below it."""
    profiles = json.loads(PROFILES.read_text())
    assert len({p["workload"] for p in profiles}) >= 4
    # The built-in workloads' own steps (Keras on TensorFlow or JAX), whose jobs the floor
    # refuses; the plain-PyTorch reference models' captured steps ("/torch", issue 44) keep
    # less (SDPA's fused attention keeps no L x L scores) and are never refused by it.
    for p in (p for p in profiles if p.get("backend") != "torch"):
        floor = activation_floor(p["workload"], p["dims"], p["batch"], p["precision"], "train")
        # kept for the backward pass, and with checkpointing one block's recomputed activations
        recomputing = p.get("recomputed_activation_bytes", 0.0) / p["dims"].get("layers", 1)
        traced = p["saved_activation_bytes"] + recomputing
        assert traced / 4 < floor <= traced, (p["workload"], p["dims"], p["precision"])
    # A forward pass needs at least its largest single tensor: at long sequences, one
    # layer's attention probabilities (heads x L x L).
    dims = {"seq_len": 1024, "layers": 12, "hidden": 768, "heads": 12, "ffn": 3072}
    assert activation_floor("bert-base", dims, 1, "fp32", "forward") == 4 * 12 * 1024 * 1024


@pytest.mark.parametrize("args", [("specs", "--json"), ("specs",)])
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(args: tuple[str, ...]) -> None:
    """``gpuscout specs --json | head -1``: the reader leaves before the output is written;
    the command exits 141 (as a tool killed by SIGPIPE) with nothing on stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone: every write gets EPIPE
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


def test_a_model_builder_that_never_returns_is_stopped_within_the_build_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The builder sleeps for an hour; the child is killed once building passes the limit
    (the --seconds budget, at least BUILD_MIN_S). Run in this process with the floor lowered
    to 3 s, so the test waits 3 s rather than 30: the measuring child is still a real process,
    and the limit is the one the runner computes (--seconds 1 is below the floor). The limit
    is the runner's, the same for every backend: the child is the cheaper one (JAX where
    installed, a builder file importing no framework: tests/data/bare_builders.py)."""
    from gpuscout.measure import runner

    backend = "jax" if importlib.util.find_spec("jax") is not None else "tensorflow"
    monkeypatch.setattr(runner, "BUILD_MIN_S", 3.0)
    t0 = time.monotonic()
    r = run_in_process(
        "bench", "--backend", backend, "--model", f"{BARE}:hangs", "--seconds", "1", "--json",
        "--db", str(tmp_path / "runs.sqlite"), stderr_file=True)  # fmt: skip
    took = time.monotonic() - t0
    assert r.code == 1, r.err
    run = RunResult.model_validate(r.json())
    assert run.status == "error"
    assert "building the model took more than 3 s" in (run.message or ""), run.message
    assert "--seconds" in (run.message or "") and "at least 3 s" in (run.message or "")
    assert took < 200  # the builder sleeps for an hour
    assert not leftovers()


def test_a_launcher_killed_mid_collective_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGKILL can be neither caught nor forwarded: the workers (blocked in all-reduces with
    each other) and their measuring children must die on their own, at once."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", CLI, "launch", "--workers", "2", "-q",
         "--db", str(tmp_path / "runs.sqlite"), "--",
         "bench", "--workload", "mlp", "--steps", "100000000", "--batch-size", "16"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    children = _measuring_children(launcher.pid, deadline_s=120)
    assert len(children) == 2, "the workers' measuring processes never started"
    _wait_until_connected(children, deadline_s=120)
    time.sleep(3)  # the model is built and the steps (each one all-reduced) are running
    everyone = [*psutil.Process(launcher.pid).children(recursive=True)]
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    _, alive = psutil.wait_procs(everyone, timeout=PATIENCE_S)
    assert not alive, [p.pid for p in alive]
    assert not leftovers()


def _measuring_children(launcher: int, deadline_s: float) -> list[psutil.Process]:
    """The launcher's grandchildren running ``gpuscout.measure.child``."""
    end = time.monotonic() + deadline_s
    found: list[psutil.Process] = []
    while len(found) < 2 and time.monotonic() < end:
        time.sleep(0.2)
        try:
            found = [
                p
                for p in psutil.Process(launcher).children(recursive=True)
                if "gpuscout.measure.child" in " ".join(p.cmdline())
            ]
        except psutil.NoSuchProcess:
            break
    return found


def _wait_until_connected(children: list[psutil.Process], deadline_s: float) -> None:
    """Until each measuring process holds an established TCP connection (to its peer's
    collective server), as it does once the cluster is up."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if all(
            any(c.status == psutil.CONN_ESTABLISHED for c in p.net_connections("tcp"))
            for p in children
        ):
            return
        time.sleep(0.5)
    raise AssertionError("the workers never connected to each other")


def test_a_terminated_launcher_stops_its_workers_in_bounded_time(tmp_path: Path) -> None:
    """What ``timeout 180 gpuscout launch ...`` does: SIGTERM to the launcher, mid-run. It
    stops its workers itself (SIGTERM, then SIGKILL) and stores the interrupted run."""
    db = tmp_path / "runs.sqlite"
    launcher = subprocess.Popen(
        [sys.executable, "-c", CLI, "launch", "--workers", "2", "-q", "--json",
         "--db", str(db), "--",
         "bench", "--workload", "mlp", "--steps", "100000000", "--batch-size", "16"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    children = _measuring_children(launcher.pid, deadline_s=120)
    assert len(children) == 2, "the workers' measuring processes never started"
    _wait_until_connected(children, deadline_s=120)
    time.sleep(3)
    launcher.send_signal(signal.SIGTERM)
    out, _ = launcher.communicate(timeout=90)  # FAIL_GRACE_S + TERM_GRACE_S, and slack
    run = RunResult.model_validate_json(out)
    assert launcher.returncode == 1 and run.status == "error", out
    assert "interrupted" in (run.message or ""), run.message  # each worker said so, and stored
    assert not leftovers()
