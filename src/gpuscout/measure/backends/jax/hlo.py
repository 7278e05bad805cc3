"""The HLO of a built-in workload's training step on JAX, for ``predict``'s cost profile.

The same step the JAX backend times (``backend.train_step``), lowered for a CUDA GPU with
``jax.jit(...).trace(...).lower`` and never run, printed as HLO text with operand shapes (what
``predict/hlo.py`` parses, as it parses TensorFlow's). JAX's forward ops carry ``jvp(`` in their
op names: that prefix stands for the model's name in the saved-activation estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from gpuscout.measure.backends.jax import runtime as jax_runtime
from gpuscout.measure.synthetic import arrays
from gpuscout.predict.step_ir import StepIR, variable_bytes
from gpuscout.workloads import get_workload

FORWARD_SCOPE = "jit(step)/jvp("


def step_hlo(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    """HLO text of one training step of ``workload`` (with ``dims``) at ``batch``, on JAX."""
    jax = jax_runtime.import_jax()
    import jaxlib._hlo as hlo_lib
    import keras

    from gpuscout.measure.backends.jax.backend import train_step
    from gpuscout.measure.backends.keras.models import BUILDERS

    w = get_workload(workload)
    resolved = w.resolve(dims)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    try:
        built = BUILDERS[w.name](resolved)
        step, state = train_step(jax, built, precision)
        x, y = arrays(w, resolved, batch, 0)
        # lowered for a CUDA GPU, which predictions model (no GPU needed to lower): XLA's CPU
        # backend has no float16 matmul with float32 accumulation
        lowered = step.trace(state, x, y).lower(lowering_platforms=("cuda",))
        module = lowered.compiler_ir("hlo").as_hlo_module()
        options = hlo_lib.HloPrintOptions()
        options.print_operand_shape = True
        options.print_metadata = True
        weights = built.model.trainable_variables
        moments = [v for v in built.optimizer.variables if np.dtype(v.dtype).kind == "f"]
        return StepIR(
            hlo=module.to_string(options),
            params=sum(int(math.prod(v.shape)) for v in weights),
            param_bytes=sum(variable_bytes(v) for v in weights),
            optimizer_state_bytes=sum(variable_bytes(v) for v in moments),
            tf_version=f"jax {jax.__version__}",
            model_name=FORWARD_SCOPE,
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)
