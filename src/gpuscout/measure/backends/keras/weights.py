"""Are a trained model's weights still numbers? The check after a run whose loss looked fine.

A NaN can vanish before it reaches the loss: TensorFlow's oneDNN ReLU (oneDNN is on by default
on x86 CPUs with AVX512-VNNI, AVX512-BF16 or AMX: Intel's from Cascade Lake, AMD's from Zen 4;
off on the AVX2 EPYC this was found on) turns a NaN input into 0, so a NaN in one
batch's inputs makes every weight NaN while every later loss stays finite (the hidden layer's
output is 0 from then on). Seen on TensorFlow 2.21 with ``TF_ENABLE_ONEDNN_OPTS=1``: the loss of
a 2-layer ReLU MLP stayed at 1.2 for the rest of the epoch. The weights tell; each tensor is
reduced on its own device, so the check moves one boolean per tensor, not the weights.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuscout.measure.loss_check import weights_text


def broken_weights(model: Any) -> str | None:
    """Why the training is broken if some of ``model``'s float weights hold NaN/Inf, else None."""
    return broken_arrays(model.weights)


def broken_arrays(arrays: Iterable[Any]) -> str | None:
    """The same for weights held apart from a model (the JAX step threads its own state)."""
    import keras

    bad = total = 0
    for v in arrays:
        if "float" not in keras.backend.standardize_dtype(v.dtype):
            continue  # counters and integer state
        total += 1
        bad += not bool(keras.ops.all(keras.ops.isfinite(v)))
    return weights_text(bad, total) if bad else None
