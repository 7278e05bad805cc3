"""What a measuring backend hands ``predict`` of a traced training step: its HLO text and the
sizes the memory estimate and the all-reduce model need (``predict/hlo.py`` reads the text).

A shared leaf, not part of ``predict``: the backends (in ``measure``, left of predict) build it
and predict reads it, so the type both sides share sits beside ``records``, importing no stage
(the layer rule of ``docs/architecture.md``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepIR:
    """A training step's HLO text, as a measuring backend traced it, and the sizes the memory
    estimate and the all-reduce model need."""

    hlo: str
    params: int
    param_bytes: int
    optimizer_state_bytes: int
    tf_version: str  # the framework that traced it ("2.21.0"; "jax 0.10.2" for JAX)
    model_name: str  # prefixes the op names of the forward pass in the HLO
    # Weights the step reads but does not train (LoRA's frozen base): held, no gradient or
    # optimizer state. 0 where every weight is trained.
    frozen_bytes: int = 0
    # How the step was traced and what that assumed, where the tracer says more than the
    # framework's name (a captured PyTorch step: "; "-joined, said in the profile's method)
    notes: str = ""


def variable_bytes(var: Any) -> int:
    """Bytes of a variable or array (anything with ``shape`` and a NumPy-compatible dtype)."""
    import numpy as np

    return int(math.prod(var.shape)) * int(np.dtype(var.dtype).itemsize)


# The custom calls a traced step uses for a fused (flash) attention kernel, forward and
# backward: the tracer (``measure/backends/jax/fused_attention.py``) emits them where the GPU
# would run cuDNN's fused kernel, and ``predict/hlo_text.py`` costs them by FlashAttention-2's
# count. "_causal" in the name: the kernel skips the masked half of the scores.
FUSED_ATTENTION_FORWARD = "gpuscout_fused_attention_fwd"
FUSED_ATTENTION_BACKWARD = "gpuscout_fused_attention_bwd"
CAUSAL = "_causal"
# How a captured PyTorch step names its backward ops (``metadata={op_name="autograd/..."}``;
# its forward ops are named under the model, as a traced XLA step's are), so the saved
# activations are found as for TensorFlow's gradient tape (``predict/hlo.py``)
TORCH_BACKWARD = "autograd"
