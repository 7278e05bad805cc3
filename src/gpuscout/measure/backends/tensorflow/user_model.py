"""The user's own model (and optionally data): loading it, and choosing what it lacks.

A model function may return a compiled or an uncompiled ``keras.Model``. What gpuscout has to
choose for an uncompiled one (loss, optimizer, synthetic labels) is returned as assumptions, so
the user sees them in the output.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from types import ModuleType
from typing import Any

import keras
import numpy as np

from gpuscout.errors import UserError
from gpuscout.measure.backends.tensorflow.models import Built
from gpuscout.measure.user_spec import FunctionSpec, ModelSpec


def _load_module(spec: FunctionSpec, flag: str) -> ModuleType:
    name = f"gpuscout_user_{abs(hash(str(spec.path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, spec.path)
    if module_spec is None or module_spec.loader is None:
        raise UserError(f"{flag} file '{spec.path}' cannot be imported as Python.", "check it.")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise UserError(
            f"{flag} file '{spec.path}' has a syntax error at line {exc.lineno}: {exc.msg}.",
            "fix the file.",
        ) from None
    return module


def call_function(spec: FunctionSpec, flag: str, **kwargs: Any) -> Any:
    """Import the file and call its function (with ``kwargs``: the ones it accepts)."""
    module = _load_module(spec, flag)
    fn = getattr(module, spec.function, None)
    if not callable(fn):
        names = [n for n, v in vars(module).items() if inspect.isfunction(v)]
        raise UserError(
            f"{flag}: '{spec.path}' has no function '{spec.function}'"
            f" (it has: {', '.join(names) or 'none'}).",
            "name a function that exists.",
        )
    accepted = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in accepted})


def accepted_keywords(spec: FunctionSpec, flag: str, names: tuple[str, ...]) -> set[str]:
    """Which of ``names`` the user's function takes as parameters."""
    fn = getattr(_load_module(spec, flag), spec.function, None)
    if not callable(fn):
        return set()
    return set(names) & set(inspect.signature(fn).parameters)


def load_model(spec: ModelSpec) -> Any:
    if spec.keras_file is not None:
        try:
            model = keras.saving.load_model(spec.keras_file, safe_mode=True)
        except (ValueError, OSError) as exc:
            raise UserError(
                f"--model '{spec.keras_file}' could not be loaded: {str(exc).splitlines()[0]}",
                "check that it is a Keras 3 .keras file without unsafe lambdas.",
            ) from None
    else:
        assert spec.function is not None
        model = call_function(spec.function, "--model")
    if not isinstance(model, keras.Model):
        raise UserError(
            f"--model '{spec.path}' returned {type(model).__name__}, not a keras.Model.",
            "make the function return a keras.Model (compiled or not).",
        )
    return model


def _last_activation(model: Any) -> str | None:
    act = getattr(model.layers[-1], "activation", None) if model.layers else None
    return getattr(act, "__name__", None)


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
