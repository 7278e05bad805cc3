"""Are a trained model's weights still numbers? The check after a run whose loss looked fine.

A NaN can vanish before it reaches the loss: TensorFlow's oneDNN ReLU (oneDNN is on by default
on Linux x86 CPUs with AVX512-VNNI, AVX-VNNI, AVX512-BF16 or AMX, so on Intel's from Cascade
Lake and AMD's from Zen 4; off on the AVX2 EPYC this was found on) turns a NaN input into 0,
so a NaN in one batch's inputs makes the first layer's kernel NaN while every later loss stays
finite (the hidden layer's output is 0 from then on). Seen on TensorFlow 2.21 with
``TF_ENABLE_ONEDNN_OPTS=1``: the loss of a 2-layer ReLU MLP stayed at 1.2 for the rest of the
epoch. The weights tell; each tensor is reduced on its own device, so the check moves one
boolean per tensor, not the weights. On a run over several JAX processes the check is not made
(each process holds only its shards); that run's loss check still applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from gpuscout.measure.loss_check import weights_text
from gpuscout.measure.protocol import Outcome


def checked(outcome: Outcome, weights: Iterable[Any]) -> Outcome:
    """``outcome``, made broken if its loss looked fine but ``weights`` hold NaN/Inf (the one
    place every backend's loop applies the check, after its steps)."""
    if outcome.broken is not None:
        return outcome
    return dataclasses.replace(outcome, broken=broken_arrays(weights))


def broken_weights(model: Any) -> str | None:
    """Why the training is broken if some of ``model``'s float weights hold NaN/Inf, else None."""
    return broken_arrays(model.weights)


def broken_arrays(arrays: Iterable[Any]) -> str | None:
    """The same for weights held apart from a model (the JAX step threads its own state)."""
    import keras

    floats = [v for v in arrays if "float" in keras.backend.standardize_dtype(v.dtype)]
    try:
        finite = _finite(floats)  # integer state (counters, seeds) left out
    except Exception:  # an extra after a finished measurement: never lose the run to it
        return None
    bad = sum(not ok for ok in finite)
    return weights_text(bad, len(floats)) if bad else None


def _finite(arrays: list[Any]) -> list[bool]:
    """Whether each array is all finite, checked where it is cheapest.

    TensorFlow runs each check eagerly (no compilation). On JAX every new shape compiles a
    kernel (3.5 s for ResNet-50's 28 shapes on a 2-core CPU; one jitted check of all: 1.7 s):
    arrays already in host memory are read there instead (no transfer, no compilation); arrays on
    an accelerator get the one jitted check, so the weights never cross to the host."""
    import keras

    if keras.backend.backend() != "jax":
        return [bool(keras.ops.all(keras.ops.isfinite(v))) for v in arrays]
    import numpy as np

    values = [getattr(v, "value", v) for v in arrays]  # a Keras variable's array
    if all(d.platform == "cpu" for v in values for d in v.devices()):
        return [bool(np.isfinite(np.asarray(v, dtype=np.float32)).all()) for v in values]
    return on_device(values)


def on_device(values: list[Any]) -> list[bool]:
    """One jitted check of JAX arrays where they are: one boolean each comes back."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    if not values:
        return []
    check = jax.jit(lambda xs: jnp.stack([jnp.all(jnp.isfinite(x)) for x in xs]))
    return [bool(ok) for ok in np.asarray(check(values))]
