"""The HLO of a built-in workload's training step, for the cost profile (``predict/``).

Builds the model under the precision policy, wraps the same train step the benchmark times
(``tf_train.train_step_function``) in XLA, and asks for its HLO without running it: no device
time, and the shapes are those of the requested batch. Also reports the sizes that the memory
estimate and the all-reduce model need: trainable parameters and optimizer state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscout.measure import tf_runtime
from gpuscout.measure.workloads import get_workload


@dataclass(frozen=True)
class StepIR:
    hlo: str
    params: int
    param_bytes: int
    optimizer_state_bytes: int
    tf_version: str
    model_name: str  # prefixes the op names of the forward pass in the HLO


def _size(var: Any) -> int:
    return int(math.prod(var.shape)) * int(np.dtype(var.dtype).itemsize)


def step_hlo(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    """HLO text of one training step of ``workload`` (with ``dims``) at ``batch``."""
    tf = tf_runtime.import_tensorflow()
    import keras

    from gpuscout.measure.tf_models import BUILDERS
    from gpuscout.measure.tf_train import train_step_function

    w = get_workload(workload)
    resolved = w.resolve(dims)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    try:
        built = BUILDERS[w.name](resolved)
        step = train_step_function(tf, built, precision, jit_compile=True)
        x = tf.zeros((batch, *w.input_shape(resolved)), dtype=w.input_dtype)
        y = tf.zeros((batch, *w.label_shape), dtype="int32")
        hlo = step.experimental_get_compiler_ir(x, y)(stage="hlo")
        weights = built.model.trainable_variables
        state = [v for v in built.optimizer.variables if np.dtype(v.dtype).kind == "f"]
        return StepIR(
            hlo=hlo,
            params=sum(int(math.prod(v.shape)) for v in weights),
            param_bytes=sum(_size(v) for v in weights),
            optimizer_state_bytes=sum(_size(v) for v in state),
            tf_version=tf.__version__,
            model_name=built.model.name,
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)
