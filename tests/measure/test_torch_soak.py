"""``soak --backend torch`` on CPU (issue 44): bench's eager Keras-on-PyTorch step, and a plain
``torch.nn.Module``'s step, run by the shared soak loop and stored as PyTorch runs. The
commands run in this process (stderr a real file): their measuring children are the PyTorch
processes tested."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_in_process

pytest.importorskip("torch", reason="the PyTorch backend needs pip install 'gpuscout[torch]'")

TORCH_CNN = Path(__file__).parents[2] / "examples" / "models" / "torch_cnn.py"


def test_soak_on_torch_stores_a_keras_run_and_a_plain_module_run(tmp_path: Path) -> None:
    """A Keras workload with --backend torch, then a plain torch.nn.Module without --backend
    (its file imports torch: soaked on PyTorch, without Keras): each checks every loss, says
    which step it ran and is stored with backend torch."""
    db = str(tmp_path / "runs.sqlite")
    keras_soak = run_in_process("soak", "--backend", "torch", "--workload", "mlp", "--batch-size",
                                "32", "--minutes", "0.02", "--db", db, "--json",
                                stderr_file=True)  # fmt: skip
    assert keras_soak.code in (0, 3), keras_soak.err  # 1.2 s: too short for windows
    report = keras_soak.json()
    assert report["steps"] > 0 and report["device"] == "CPU:0" and report["batch_size"] == 32
    assert "loss finite" in " ".join(report["evidence"])
    module_soak = run_in_process("soak", "--model", f"{TORCH_CNN}:build", "--batch-size", "8",
                                 "--minutes", "0.02", "--db", db, "--json",
                                 stderr_file=True)  # fmt: skip
    assert module_soak.code in (0, 3), module_soak.err
    assert module_soak.json()["steps"] > 0 and module_soak.json()["batch_size"] == 8
    listed = run_in_process("runs", "list", "--db", db, "--json").json()
    assert [r["backend"] for r in listed] == ["torch"] * 2
    runs = {r["workload"]: r for r in listed}
    assert set(runs) == {"mlp", f"{TORCH_CNN}:build"}
    for run in runs.values():
        assert run["xla"] is False and run["stop_reason"].startswith("soak: ")
    shown = run_in_process("runs", "show", str(runs["mlp"]["id"]), "--db", db, "--json").json()
    # a rate only from the steps of whole windows, which a 1.2 s soak on a busy machine may
    # not have: stored with its steps, or neither
    rate = shown["samples_per_second"]
    assert (rate is None) == (shown["measured_steps"] == 0), shown
    assert rate is None or 0 < rate["ci_low"] <= rate["median"] <= rate["ci_high"]
    said = " ".join(shown["assumptions"])
    assert "Keras 3 on PyTorch, the eager step bench times" in said and "every loss" in said
    shown = run_in_process("runs", "show", str(runs[f"{TORCH_CNN}:build"]["id"]), "--db", db,
                           "--json").json()  # fmt: skip
    said = " ".join(shown["assumptions"])
    assert "a plain PyTorch model" in said and "optimizer.step()" in said
    assert "Keras 3 on PyTorch" not in said
