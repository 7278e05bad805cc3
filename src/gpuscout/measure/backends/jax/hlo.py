"""The HLO of a training step (or a forward pass) on JAX, for ``predict``'s cost profile and
for the FLOPs of a user's model.

The same step the JAX backend times (``step.train_step``), lowered for a CUDA GPU with
``jax.jit(...).trace(...).lower`` and never run, printed as HLO text with operand shapes (what
``predict/hlo.py`` parses, as it parses TensorFlow's). JAX's forward ops carry ``jvp(`` in their
op names: that prefix stands for the model's name in the saved-activation estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import numpy as np

from gpuscout.core.step_ir import StepIR, variable_bytes
from gpuscout.measure.backends.jax import runtime as jax_runtime
from gpuscout.measure.backends.jax.fused_attention import traced_as_fused
from gpuscout.measure.synthetic import arrays
from gpuscout.workloads import get_workload

FORWARD_SCOPE = "jit(step)/jvp("
FORWARD_ONLY_SCOPE = "jit(forward)/"
# Where cuDNN's fused attention runs (on Ampere and newer): float16 and bfloat16 math
FUSED_PRECISIONS = ("mixed_float16", "mixed_bfloat16")


def lowered_text(lowered: Any) -> str:
    """A lowered computation as HLO text with operand shapes and op names."""
    import jaxlib._hlo as hlo_lib

    module = lowered.compiler_ir("hlo").as_hlo_module()
    options = hlo_lib.HloPrintOptions()
    options.print_operand_shape = True
    options.print_metadata = True
    return str(module.to_string(options))


def step_ir(jax: Any, built: Any, precision: str, x: Any, y: Any) -> StepIR:
    """One training step of ``built`` on ``(x, y)``, lowered for CUDA (XLA's CPU backend has
    no float16 matmul with float32 accumulation; no GPU is needed to lower)."""
    from gpuscout.measure.backends.jax.step import train_step

    step, state = train_step(jax, built, precision)
    lowered = step.trace(state, x, y).lower(lowering_platforms=("cuda",))
    return _train_ir(jax, lowered, built.model, built.optimizer.variables)


def _train_ir(jax: Any, lowered: Any, model: Any, optimizer_state: list[Any]) -> StepIR:
    """A lowered training step's HLO and sizes: trained weights and their optimizer state
    (its float entries: moments, not the step counter), the frozen weights apart."""
    weights = model.trainable_variables
    moments = [v for v in optimizer_state if np.dtype(v.dtype).kind == "f"]
    return StepIR(
        hlo=lowered_text(lowered),
        params=sum(int(math.prod(v.shape)) for v in weights),
        param_bytes=sum(variable_bytes(v) for v in weights),
        optimizer_state_bytes=sum(variable_bytes(v) for v in moments),
        tf_version=f"jax {jax.__version__}",
        model_name=FORWARD_SCOPE,
        frozen_bytes=sum(variable_bytes(v) for v in model.non_trainable_variables),
    )


def _under_policy(precision: str, build: Callable[[Any], StepIR]) -> StepIR:
    """``build(jax)`` under the precision's global Keras policy, restored afterwards."""
    jax = jax_runtime.import_jax()
    keras = jax_runtime.keras_on_jax()
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    try:
        return build(jax)
    finally:
        keras.mixed_precision.set_global_policy(previous)


def step_hlo(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    """HLO text of one training step of ``workload`` (with ``dims``) at ``batch``, on JAX."""
    w = get_workload(workload)
    resolved = w.resolve(dims)

    def build(jax: Any) -> StepIR:  # Keras modules only once Keras is on JAX
        from gpuscout.measure.backends.keras.models import BUILDERS

        x, y = arrays(w, resolved, batch, 0)
        return step_ir(jax, BUILDERS[w.name](resolved), precision, x, y)

    return _under_policy(precision, build)


def abstract_step_hlo(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    """The same step as ``step_hlo``, traced from shapes alone: no weight, optimizer moment or
    input is ever allocated, so an 8B decoder's step lowers in seconds in half a gigabyte.

    The model is built inside a ``keras.StatelessScope`` that leaves its variables
    uninitialized (Keras defers a variable created there until it is first used), and the step
    is traced on ``jax.ShapeDtypeStruct``s of its state and batch. For the decoder LLM workloads
    (``keras/llama.py`` builds their model apart from the optimizer, which must be created
    outside the scope; ``train_step(abstract=True)`` builds its moments in such a scope).

    In 16-bit precisions the attention is traced as the fused kernel Keras on JAX runs on an
    Ampere or newer GPU (``jax/fused_attention.py``); in float32 as XLA's unfused ops, as
    Keras runs it there (cuDNN's fused kernel takes float16 and bfloat16 only)."""
    w = get_workload(workload)
    resolved = w.resolve(dims)

    def build(jax: Any) -> StepIR:
        import keras

        from gpuscout.measure.backends.jax.step import train_step
        from gpuscout.measure.backends.keras.llama import llama_loss_and_optimizer, llama_model
        from gpuscout.measure.backends.keras.models import Built

        with keras.StatelessScope(initialize_variables=False):
            model = llama_model(resolved)
        checkpointing = bool(resolved.get("checkpointing"))
        built = Built(model, *llama_loss_and_optimizer(resolved), checkpointing)
        step, state = train_step(jax, built, precision, abstract=True)
        x = jax.ShapeDtypeStruct((batch, *w.input_shape(resolved)), np.int32)
        y = jax.ShapeDtypeStruct((batch, *w.labels_shape(resolved)), np.int32)
        with traced_as_fused() if precision in FUSED_PRECISIONS else nullcontext():
            lowered = step.trace(state, x, y).lower(lowering_platforms=("cuda",))
        return _train_ir(jax, lowered, model, state[2])

    return _under_policy(precision, build)


def user_step_hlo(model_spec: str, batch: int, precision: str) -> StepIR:
    """HLO of one training step of the user's model (``FILE.py:FUNCTION`` or ``FILE.keras``)."""
    from gpuscout.measure.user_spec import parse_model_spec

    spec = parse_model_spec(model_spec)

    def build(jax: Any) -> StepIR:
        from gpuscout.measure.backends.keras import user_model as keras_user

        built, _ = keras_user.prepare_user_model(keras_user.load_model(spec))
        x, y = keras_user.synthetic_xy(built, batch, np.random.default_rng(0))
        return step_ir(jax, built, precision, x, y)

    return _under_policy(precision, build)


def live_step_hlo(model: Any, batch: int, precision: str) -> StepIR:
    """HLO of one training step of a model already built in this process (``ScoutCallback``
    on JAX): a clone with a fresh optimizer of the same configuration, so the user's weights
    and optimizer state are not touched. Subclassed models cannot be cloned: ValueError."""
    jax = jax_runtime.import_jax()
    keras = jax_runtime.keras_on_jax()
    from gpuscout.measure.backends.keras import user_model as keras_user
    from gpuscout.measure.backends.keras.models import Built

    built, _ = keras_user.prepare_user_model(model)
    clone = keras.models.clone_model(model)
    fresh = type(built.optimizer).from_config(built.optimizer.get_config())
    copy = Built(clone, built.loss, fresh)
    x, y = keras_user.synthetic_xy(copy, batch, np.random.default_rng(0))
    return step_ir(jax, copy, precision, x, y)


def forward_hlo(
    workload: str | None, model_spec: str | None, dims: Mapping[str, int], batch: int,
    precision: str,
) -> StepIR:  # fmt: skip
    """HLO of one inference call (``training=False``) at ``batch``: what ``bench --mode
    inference --backend jax`` times, for ``predict --mode inference``."""

    def build(jax: Any) -> StepIR:
        from gpuscout.measure.backends.jax.serve import forward_function, load_for_serving

        model, inputs, _ = load_for_serving(workload, model_spec, dims, 0)
        forward, weights = forward_function(jax, model)
        lowered = forward.trace(weights, inputs(batch)).lower(lowering_platforms=("cuda",))
        return StepIR(
            hlo=lowered_text(lowered),
            params=sum(int(math.prod(v.shape)) for v in model.weights),
            param_bytes=sum(variable_bytes(v) for v in model.weights),
            optimizer_state_bytes=0,
            tf_version=f"jax {jax.__version__}",
            model_name=FORWARD_ONLY_SCOPE,
        )

    return _under_policy(precision, build)
