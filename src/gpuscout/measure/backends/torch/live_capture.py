"""The training step of a Keras model already built on PyTorch (``ScoutCallback`` in a user's
``fit()``), captured for ``predict`` as a plain PyTorch module's step is (``capture.py``).

The user's model and its optimizer are never touched: a clone of the model (``clone_model``:
its weights made again on the CPU, as the JAX backend's trace makes them) and a fresh
optimizer of the same configuration. The clone's float weights are then swapped for fake
tensors of their shapes (``FakeTensorMode``: no compute, no activation memory), and bench's
eager Keras step (``step.train_step``) runs twice: the first creates the optimizer's state, the
second is recorded op by op below autograd, as ``capture.py`` records a module's step. The
clone's integer state (the dropout seed, the step counter) stays real: Keras reads the seed's
value to draw a mask, which a fake tensor cannot give.

Mixed precision is the layers' own dtype policy (Keras casts; there is no autocast). Keras'
``LossScaleOptimizer`` (mixed_float16) decides on the gradients' values whether to apply them,
which shapes alone cannot: its step is captured without it, and its one pass over the gradients
(unscale and check) is written as AMP's, as the capture of a module writes ``GradScaler``'s.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from gpuscout.core.step_ir import StepIR
from gpuscout.measure.backends.torch.aten_ops import AtenOp
from gpuscout.measure.backends.torch.op_recorder import OpRecorder, nbytes
from gpuscout.measure.backends.torch.runtime import import_torch, keras_on_torch
from gpuscout.measure.backends.torch.to_hlo import to_hlo

HOW = (
    "aten ops of the Keras-on-PyTorch train step (forward, loss, loss.backward(), the "
    "optimizer's apply) of a clone of your model, captured once on the CPU under "
    "FakeTensorMode (shapes only: nothing computed), its second step recorded"
)


def live_step_hlo(model: Any, batch: int, precision: str) -> StepIR:
    """One training step of ``model`` (built in this process, Keras on PyTorch) at ``batch``."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuscout.measure.backends.keras import user_model as keras_user
    from gpuscout.measure.backends.keras.models import Built
    from gpuscout.measure.backends.torch.step import train_step

    torch = import_torch()
    keras = keras_on_torch()
    built, _ = keras_user.prepare_user_model(model)
    x, y = keras_user.synthetic_xy(built, batch, np.random.default_rng(0))
    with keras.device("cpu"):
        clone = keras.models.clone_model(model)
        fresh = type(built.optimizer).from_config(built.optimizer.get_config())
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    recorder = OpRecorder(torch)
    scaled = precision == "mixed_float16"

    def mark(phase: str) -> None:
        recorder.phase = phase
        if phase == "optimizer" and scaled:  # LossScaleOptimizer's pass over the gradients
            grads = [v.value.grad for v in clone.trainable_variables]
            refs = {"self": [recorder.ref(g) for g in grads if g is not None]}
            recorder.ops.append(
                AtenOp("_amp_foreach_non_finite_check_and_unscale_", refs, [], "backward")
            )

    with keras.device("cpu"), mode:
        for v in clone.variables:  # float weights fake; integer state (seeds, counters) real
            if "float" in str(v.dtype):
                v._value = torch.nn.Parameter(mode.from_tensor(v.value), v.trainable)
        # the step's loss scaling left out (see the module's docstring); the casts are the model's
        hook = [lambda phase: None]  # the first step runs unrecorded
        step = train_step(
            torch, Built(clone, built.loss, fresh), "fp32", mark=lambda phase: hook[0](phase)
        )
        xs = keras.tree.map_structure(torch.as_tensor, x)
        ys = keras.tree.map_structure(torch.as_tensor, y)
        step(xs, ys)
        hook[0] = mark
        with recorder:
            step(xs, ys)
    name = re.sub(r"[^\w.\-]", "_", model.name) or "model"
    trainable = [v.value for v in clone.trainable_variables]
    notes = [HOW, _precision_note(precision)]
    return StepIR(
        hlo=to_hlo(recorder.ops, name),
        params=sum(int(t.numel()) for t in trainable),
        param_bytes=sum(nbytes(t) for t in trainable),
        optimizer_state_bytes=sum(
            nbytes(v.value) for v in fresh.variables if "float" in str(v.dtype)
        ),
        tf_version=f"torch {torch.__version__}",
        model_name=name,
        frozen_bytes=sum(nbytes(v.value) for v in clone.non_trainable_variables),
        notes="; ".join(notes),
    )


def _precision_note(precision: str) -> str:
    if precision == "fp32":
        return "float32 throughout (the model's policy: no casts)"
    dtype = "float16" if precision == "mixed_float16" else "bfloat16"
    said = f"the layers' {precision} policy: Keras casts to {dtype} (no autocast)"
    if precision == "mixed_float16":
        said += "; LossScaleOptimizer's loss scaling as one pass over the gradients"
    return said
