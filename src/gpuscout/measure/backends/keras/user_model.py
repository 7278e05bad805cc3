"""The user's own model (and optionally data): loading it, and choosing what it lacks.

A model function may return a compiled or an uncompiled ``keras.Model``. What gpuscout has to
choose for an uncompiled one (loss, optimizer, synthetic labels) is returned as assumptions, so
the user sees them in the output.

Everything wrong with the user's code that shows before the first measured step (a file that
does not import, a function that raises, needs an argument, or returns something that is not a
model with inputs) is a :class:`UserError`: refused with one line, nothing stored, like any
other bad input. Only running out of memory while building passes through, to be stored as an
``oom`` run: that is the device's answer, not a mistake in the file.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np

from gpuscout.core.errors import UserError, is_oom
from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.user_code import call_function, first_line
from gpuscout.measure.user_spec import ModelSpec


def load_model(spec: ModelSpec) -> Any:
    """The user's model, checked to be one gpuscout can feed; UserError if not."""
    if spec.keras_file is not None:
        label = f"'{spec.keras_file}'"
        try:
            model = keras.saving.load_model(spec.keras_file, safe_mode=True)
        except Exception as exc:
            if is_oom(exc):
                raise
            raise UserError(
                f"--model {label} is not a readable Keras file: Keras said "
                f"{type(exc).__name__}: {first_line(exc).rstrip('.')}.",
                "save it with model.save('name.keras') in Keras 3 (safe mode refuses Lambda "
                "layers, and custom layers need their code), or build it with --model "
                "FILE.py:FUNCTION.",
            ) from None
    else:
        assert spec.function is not None
        label = f"{spec.function.path}:{spec.function.function}"
        model = call_function(spec.function, "--model")
    if not isinstance(model, keras.Model):
        raise UserError(
            f"--model {label} returned {type(model).__name__}, not a keras.Model.",
            "make the function return a keras.Model (compiled or not).",
        )
    _check_inputs(model, label)
    return model


def _check_inputs(model: Any, label: str) -> None:
    """A model never told its input shape (a Sequential without ``keras.Input``, a subclassed
    model never called) has no inputs to make data for and no outputs to make labels for."""
    try:
        ok = bool(model.inputs) and bool(model.outputs)
        reason = "it has no inputs"
    except (AttributeError, ValueError) as exc:
        ok, reason = False, first_line(exc).rstrip(".")
    if not ok:
        raise UserError(
            f"--model {label} returned a model without an input layer ({reason}), so its "
            "input shape is unknown.",
            "start the model with keras.Input(shape=...), e.g. keras.Sequential("
            "[keras.Input((20,)), ...]).",
        )


def _last_activation(model: Any) -> str | None:
    act = getattr(model.layers[-1], "activation", None) if model.layers else None
    return getattr(act, "__name__", None)


def _batch_mean(fn: Any) -> Any:
    """A loss function (``compile(loss="mse")`` keeps one) gives a loss per sample; compile
    reduces it to the batch mean, and a step needs that scalar (JAX's grad refuses a vector)."""

    def loss(y_true: Any, y_pred: Any) -> Any:
        return keras.ops.mean(fn(y_true, y_pred))

    loss.__name__ = getattr(fn, "__name__", "loss")  # read when choosing synthetic labels
    return loss


def prepare_user_model(model: Any) -> tuple[Built, list[str]]:
    """Loss and optimizer from the compiled model, or chosen (and said) for an uncompiled one."""
    assumptions: list[str] = []
    out_dim = int(model.outputs[0].shape[-1] or 1)
    loss = getattr(model, "loss", None)
    if loss is None:
        if out_dim > 1:
            from_logits = _last_activation(model) != "softmax"
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits)
            assumptions.append(
                f"model not compiled: loss = sparse categorical cross-entropy "
                f"(from_logits={from_logits}) over {out_dim} classes"
            )
        else:
            loss = keras.losses.MeanSquaredError()
            assumptions.append("model not compiled: loss = mean squared error (1 output)")
    else:
        loss = keras.losses.get(loss) if isinstance(loss, str) else loss
        if callable(loss) and not isinstance(loss, keras.losses.Loss):
            loss = _batch_mean(loss)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        optimizer = keras.optimizers.Adam(1e-3)
        assumptions.append("model not compiled: optimizer = Adam(1e-3)")
    return Built(model, loss, optimizer), assumptions


def synthetic_user_batch(
    model: Any, loss: Any, batch: int, rng: np.random.Generator
) -> tuple[tuple[Any, ...], Any, list[str]]:
    """Random inputs and labels that match the model's input and output signature."""
    inputs = []
    vocab = min(
        (
            int(layer.input_dim)
            for layer in model.layers
            if isinstance(layer, keras.layers.Embedding)
        ),
        default=2,
    )
    for tensor in model.inputs:
        shape = (batch, *(int(s or 1) for s in tensor.shape[1:]))
        if "int" in str(tensor.dtype):
            inputs.append(rng.integers(0, vocab, size=shape).astype(str(tensor.dtype)))
        else:
            inputs.append(rng.random(shape, dtype=np.float32))
    out_shape = (batch, *(int(s or 1) for s in model.outputs[0].shape[1:]))
    loss_name = type(loss).__name__.lower() + str(getattr(loss, "__name__", "")).lower()
    if "sparse" in loss_name:
        labels: Any = rng.integers(0, out_shape[-1], size=out_shape[:-1]).astype("int32")
        note = f"synthetic data: random inputs, integer labels in [0, {out_shape[-1]})"
    else:
        labels = rng.random(out_shape, dtype=np.float32)
        note = "synthetic data: random inputs and random float labels shaped like the output"
    return tuple(inputs), labels, [note]


def synthetic_xy(built: Built, batch: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """A synthetic batch for ``built``'s model: one input as an array, several as a tuple."""
    inputs, labels, _ = synthetic_user_batch(built.model, built.loss, batch, rng)
    return (inputs[0] if len(inputs) == 1 else tuple(inputs)), labels
