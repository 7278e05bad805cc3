"""``ScoutCallback`` in a user's ``model.fit`` on Keras 3's PyTorch backend (issue 44): the run
stored with its backend and PyTorch's device and TF32 switch, and other GPUs predicted from the
live model's step, captured under FakeTensorMode from a clone (the user's model untouched),
whose FLOPs are what ``FlopCounterMode`` counts on a real step of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PATIENCE_S, run_in_process

pytest.importorskip("torch", reason="the PyTorch backend needs pip install 'gpuscout[torch]'")

_FIT = """
import json, sys
import numpy as np
import keras
import torch
from torch._subclasses.fake_tensor import FakeTensor
from gpuscout.keras import ScoutCallback
from gpuscout.measure.backends import get
from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.backends.torch.step import count_flops, train_step
from gpuscout.predict.hlo import step_cost

inputs = keras.Input((8, 8, 3))
h = keras.layers.Conv2D(4, 3, activation="relu")(inputs)
h = keras.layers.Dropout(0.1)(keras.layers.Flatten()(h))
model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(16, activation="relu")(h)))
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = np.random.default_rng(0).random((320, 8, 8, 3), dtype=np.float32)
y = (x[:, 0, 0, 0] > 0.5).astype("int32")
printed = []
cb = ScoutCallback(batch_size=32, db=sys.argv[1], predict_on=("h100-sxm",), print_fn=printed.append)
model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[cb])
run = cb.result.to_json_dict()
untouched = not any(isinstance(v.value, FakeTensor) for v in model.variables)
after = model.predict(x[:32], verbose=0)
ir = get("torch").trace_live_step(model, 32, "fp32")
cost = step_cost(ir.hlo, forward_scope=ir.model_name)
step = train_step(torch, Built(model, model.loss, model.optimizer), "fp32")
counted = count_flops(torch, step, torch.as_tensor(x[:32]), torch.as_tensor(y[:32]))
f16 = get("torch").trace_live_step(model, 32, "mixed_float16")
print(json.dumps({"run": run, "printed": printed[0], "predicted": len(cb.predictions),
                  "untouched": untouched, "finite": bool(np.isfinite(after).all()),
                  "flops": cost.flops, "counted": counted, "params": ir.params,
                  "weights": int(sum(np.prod(v.shape) for v in model.trainable_variables)),
                  "adam": ir.optimizer_state_bytes, "notes": ir.notes, "f16": f16.notes,
                  "f16_unscale": "non_finite_check_and_unscale" in f16.hlo}))
"""


def test_scout_callback_on_torch_stores_the_run_and_predicts_from_the_captured_step(
    tmp_path: Path,
) -> None:
    """One Keras-on-PyTorch process: the fit is stored as a torch run on CPU:0 with PyTorch's
    TF32 switch (off: PyTorch's default), H100 is predicted from the captured step, the
    user's model keeps its real weights, the captured matmul and convolution FLOPs are
    FlopCounterMode's on a real step, Adam's state is two float32 copies of the weights (and
    its learning rate), and mixed_float16 is captured with the loss scaler's pass over the
    gradients."""
    db = str(tmp_path / "runs.sqlite")
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    proc = subprocess.run([sys.executable, "-c", _FIT, db], capture_output=True, text=True,
                          env=env, timeout=4 * PATIENCE_S)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    run = out["run"]
    assert run["status"] == "ok" and run["backend"] == "torch" and run["device"] == "CPU:0"
    assert run["config"]["backend"] == "torch" and run["env"]["keras_backend"] == "torch"
    assert run["env"]["tf32_enabled"] is False and run["measured_steps"] > 0
    assert out["predicted"] == 1 and "H100" in out["printed"], out["printed"]
    assert out["untouched"] and out["finite"]
    captured = out["flops"].get("matmul", 0) + out["flops"].get("conv", 0)
    assert captured == pytest.approx(out["counted"], rel=0.01), out["flops"]
    assert out["params"] == out["weights"]
    assert out["adam"] == 2 * 4 * out["weights"] + 4  # m and v, and its float learning rate
    assert "FakeTensorMode" in out["notes"] and "clone of your model" in out["notes"]
    assert out["f16_unscale"] and "LossScaleOptimizer" in out["f16"]
    listed = run_in_process("runs", "list", "--db", db, "--json")
    assert listed.code == 0 and listed.json()[0]["backend"] == "torch"
