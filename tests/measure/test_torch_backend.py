"""The PyTorch backend on CPU (issue 44): the same Keras workloads on Keras 3's PyTorch backend,
timed by the same protocol, stored with their backend, and ranked against TensorFlow and JAX.

Each measuring child that imports torch costs seconds, so each test makes few runs and checks
all it can of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_in_process

pytest.importorskip("torch", reason="the PyTorch backend needs pip install 'gpuscout[torch]'")
pytest.importorskip("jax", reason="the three-backend comparison needs pip install 'gpuscout[jax]'")

CNN = Path(__file__).parents[2] / "examples" / "models" / "cnn.py"
FEW = ("--steps", "12", "--warmup-steps", "2")


def _bench(db: str, *args: str) -> dict:  # type: ignore[type-arg]
    # in this process (stderr a real file): the measuring child is the framework process tested
    r = run_in_process("bench", *args, *FEW, "--db", db, "--json", stderr_file=True)
    assert r.code == 0, r.err
    return r.json()  # type: ignore[no-any-return]


def test_mlp_on_three_backends_is_stored_and_ranked_by_runs_compare(tmp_path: Path) -> None:
    """One mlp run per backend, same batch and precision: the PyTorch run is measured like the
    others (interval, MFU against a measured CPU peak, memory said not measured), says its
    torch version, and ``runs compare`` ranks it against TensorFlow and against JAX."""
    db = str(tmp_path / "runs.sqlite")
    same = ("--workload", "mlp", "--batch-size", "64")
    torch_run = _bench(db, "--backend", "torch", *same)
    assert torch_run["status"] == "ok" and torch_run["backend"] == "torch"
    assert torch_run["config"]["backend"] == "torch" and torch_run["xla"] is False
    assert torch_run["device"] == "CPU:0" and torch_run["measured_steps"] == 12
    assert torch_run["warmup"]["steps"] == 2
    rate = torch_run["samples_per_second"]
    assert 0 < rate["ci_low"] <= rate["median"] <= rate["ci_high"]
    assert torch_run["flops_per_step"] > 0 and 0 < torch_run["mfu"] <= 1
    assert torch_run["peak_source"].startswith("estimate: measured matmul peak")
    assert torch_run["peak_memory_bytes"] is None
    assert torch_run["memory_method"].startswith("not measured")
    env = torch_run["env"]
    assert env["torch"].startswith("2.13") and env["keras_backend"] == "torch"
    assert "tensorflow" not in env and "jax" not in env
    said = " ".join(torch_run["assumptions"])
    assert "Keras 3 on PyTorch, eager" in said and "loss.backward()" in said

    tf_run = _bench(db, "--backend", "tensorflow", *same)
    jax_run = _bench(db, "--backend", "jax", *same)
    for other, name in ((tf_run, "tensorflow"), (jax_run, "jax")):
        r = run_in_process("runs", "compare", str(other["id"]), str(torch_run["id"]), "--db", db)
        assert r.code == 0, r.err
        assert f"backends compared: torch (run {torch_run['id']}) against {name}" in r.out, r.out
        assert "not comparable" not in r.out, r.out
    listed = run_in_process("runs", "list", "--db", db)
    assert listed.code == 0 and "fp32 on PyTorch" in listed.out and "on JAX" in listed.out


def test_a_users_keras_model_on_torch_counts_its_flops_and_trains_in_bfloat16(
    tmp_path: Path,
) -> None:
    """``--model examples/models/cnn.py:build`` (its BatchNormalization's statistics updated
    by each step) under mixed_bfloat16: the FLOPs are FlopCounterMode's count of one step, the
    policy is Keras' mixed_bfloat16, the run is stored."""
    db = str(tmp_path / "runs.sqlite")
    run = _bench(db, "--backend", "torch", "--model", f"{CNN}:build", "--batch-size", "8",
                 "--precision", "mixed_bfloat16")  # fmt: skip
    assert run["status"] == "ok" and run["backend"] == "torch", run.get("message")
    assert run["workload"] == f"{CNN}:build" and run["batch_size"] == 8
    assert run["env"]["precision"] == "mixed_bfloat16" and run["precision"] == "mixed_bfloat16"
    assert "FlopCounterMode" in run["flops_method"]
    # 3x3 convolutions 3->32 at 32x32, 32->64 at 16x16, 64->128 at 8x8, dense 128->10: the
    # forward pass per sample; training adds the weights' gradients (as much again) and the
    # inputs' (as much again, but for the first layer's: its input needs none)
    convs = [32 * 32 * 3 * 32 * 9, 16 * 16 * 32 * 64 * 9, 8 * 8 * 64 * 128 * 9]
    forward = 2 * (sum(convs) + 128 * 10)
    expected = 8 * (3 * forward - 2 * convs[0])
    assert run["flops_per_step"] == pytest.approx(expected, rel=0.01)
    assert run["mfu"] is not None and run["mfu"] > 0
