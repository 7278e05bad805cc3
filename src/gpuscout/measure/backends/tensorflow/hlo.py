"""The HLO of a built-in workload's training step, for the cost profile (``predict/``).

Builds the model under the precision policy, wraps the same train step the benchmark times
(``tf_train.train_step_function``) in XLA, and asks for its HLO without running it: no device
time, and the shapes are those of the requested batch. Also reports the sizes that the memory
estimate and the all-reduce model need: trainable parameters and optimizer state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gpuscout.core.step_ir import StepIR, variable_bytes
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.workloads import get_workload


def step_hlo(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    """HLO text of one training step of ``workload`` (with ``dims``) at ``batch``."""
    tf = tf_runtime.import_tensorflow()
    from gpuscout.measure.backends.keras.models import BUILDERS

    w = get_workload(workload)
    resolved = w.resolve(dims)

    def build() -> tuple[Any, Any, Any]:
        built = BUILDERS[w.name](resolved)
        x = tf.zeros((batch, *w.input_shape(resolved)), dtype=w.input_dtype)
        y = tf.zeros((batch, *w.labels_shape(resolved)), dtype="int32")
        return built, x, y

    return _trace(tf, build, precision)


def user_step_hlo(model_spec: str, batch: int, precision: str) -> StepIR:
    """HLO of one training step of the user's model (``FILE.py:FUNCTION`` or ``FILE.keras``)."""
    tf = tf_runtime.import_tensorflow()
    from gpuscout.measure.backends.keras import user_model as keras_user
    from gpuscout.measure.user_spec import parse_model_spec

    spec = parse_model_spec(model_spec)

    def build() -> tuple[Any, Any, Any]:
        built, _ = keras_user.prepare_user_model(keras_user.load_model(spec))
        inputs, labels, _ = keras_user.synthetic_user_batch(
            built.model, built.loss, batch, np.random.default_rng(0)
        )
        x = inputs[0] if len(inputs) == 1 else tuple(inputs)
        return built, x, labels

    return _trace(tf, build, precision)


def _trace(tf: Any, build: Callable[[], tuple[Any, Any, Any]], precision: str) -> StepIR:
    import keras

    from gpuscout.measure.backends.tensorflow.train import train_step_function

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    try:
        built, x, y = build()
        step = train_step_function(tf, built, precision, jit_compile=True)
        hlo = step.experimental_get_compiler_ir(x, y)(stage="hlo")
        weights = built.model.trainable_variables
        state = [v for v in built.optimizer.variables if np.dtype(v.dtype).kind == "f"]
        return StepIR(
            hlo=hlo,
            params=sum(int(math.prod(v.shape)) for v in weights),
            param_bytes=sum(variable_bytes(v) for v in weights),
            optimizer_state_bytes=sum(variable_bytes(v) for v in state),
            tf_version=tf.__version__,
            model_name=built.model.name,
            frozen_bytes=sum(variable_bytes(v) for v in built.model.non_trainable_variables),
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)


def live_step_hlo(model: Any, batch: int, precision: str) -> StepIR:
    """HLO of one training step of a model already built in this process (``ScoutCallback``).

    Traces a clone with a fresh optimizer of the same configuration, so the user's weights and
    optimizer state are not touched. Subclassed models cannot be cloned: ValueError.
    """
    tf = tf_runtime.import_tensorflow()
    import keras

    from gpuscout.measure.backends.keras import user_model as keras_user
    from gpuscout.measure.backends.keras.models import Built

    built, _ = keras_user.prepare_user_model(model)
    loss, optimizer = built.loss, built.optimizer

    def build() -> tuple[Any, Any, Any]:
        clone = keras.models.clone_model(model)
        fresh = type(optimizer).from_config(optimizer.get_config())
        inputs, labels, _ = keras_user.synthetic_user_batch(
            clone, loss, batch, np.random.default_rng(0)
        )
        return Built(clone, loss, fresh), inputs[0] if len(inputs) == 1 else tuple(inputs), labels

    return _trace(tf, build, precision)


def forward_hlo(
    workload: str | None, model_spec: str | None, dims: Mapping[str, int], batch: int,
    precision: str,
) -> StepIR:  # fmt: skip
    """HLO of one inference call (``model(x, training=False)``) at ``batch``: what
    ``bench --mode inference`` times, for ``predict --mode inference``."""
    tf = tf_runtime.import_tensorflow()
    import keras

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    try:
        if model_spec is not None:
            from gpuscout.measure.backends.keras import user_model as keras_user
            from gpuscout.measure.user_spec import parse_model_spec

            model = keras_user.load_model(parse_model_spec(model_spec))
            loss = keras_user.prepare_user_model(model)[0].loss
            inputs, _, _ = keras_user.synthetic_user_batch(
                model, loss, batch, np.random.default_rng(0)
            )
            x: Any = inputs[0] if len(inputs) == 1 else list(inputs)
        else:
            from gpuscout.measure.backends.keras.models import BUILDERS

            assert workload is not None
            w = get_workload(workload)
            model = BUILDERS[w.name](w.resolve(dims)).model
            x = tf.zeros((batch, *w.input_shape(w.resolve(dims))), dtype=w.input_dtype)
        forward = tf.function(lambda x: model(x, training=False), jit_compile=True)
        weights = model.weights
        return StepIR(
            hlo=forward.experimental_get_compiler_ir(x)(stage="hlo"),
            params=sum(int(math.prod(v.shape)) for v in weights),
            param_bytes=sum(variable_bytes(v) for v in weights),
            optimizer_state_bytes=0,
            tf_version=tf.__version__,
            model_name=model.name,
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)
