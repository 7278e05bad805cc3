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

import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import keras
import numpy as np

from gpuscout.core.errors import UserError
from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.benchmark import is_oom
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
    except Exception as exc:
        if is_oom(exc):
            raise
        raise UserError(
            f"{flag} file '{spec.path}' failed while being imported: {_what(exc, spec.path)}.",
            "fix the file, or install what it imports (importing it in Python shows the "
            "traceback).",
        ) from None
    return module


def _first_line(exc: BaseException) -> str:
    # A KeyError's str() wraps its message in quotes; its argument is the message itself.
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    text = text.strip()
    return text.splitlines()[0][:300] if text else "(no message)"


def _what(exc: BaseException, path: Path) -> str:
    """``ValueError at line 12: message``: the line is the deepest one of the user's file in
    the traceback, so the one-line refusal still points at where to look."""
    try:
        mine = path.resolve()
        lines = [
            f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == mine
        ]
    except OSError:
        lines = []
    where = f" at line {lines[-1]}" if lines and lines[-1] else ""
    return f"{type(exc).__name__}{where}: {_first_line(exc)}"


def _required(fn: Any, given: dict[str, Any]) -> list[str]:
    """The parameters ``fn`` needs that have no default and that gpuscout does not pass."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): let the call say
        return []
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        p.name
        for p in params
        if p.default is p.empty
        and (p.kind in plain or p.kind is inspect.Parameter.KEYWORD_ONLY)
        and p.name not in given
    ]


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
    given = {k: v for k, v in kwargs.items() if k in accepted}
    name = f"{spec.path}:{spec.function}"
    if missing := _required(fn, given):
        plural = "s" if len(missing) > 1 else ""
        raise UserError(
            f"{flag} {name} needs the argument{plural} {', '.join(missing)}, which gpuscout "
            "cannot pass: it calls the function with no arguments.",
            f"give {'them' if plural else 'it'} a default value, e.g. def {spec.function}("
            f"{missing[0]}=...), or point {flag} at a function that takes none.",
        )
    try:
        return fn(**given)
    except Exception as exc:
        if is_oom(exc):  # the device's answer, stored as an oom run by the caller
            raise
        raise UserError(
            f"{flag} {name} raised {_what(exc, spec.path)}.",
            "fix the function; calling it in Python shows the traceback (nothing was "
            "measured or stored).",
        ) from None


def accepted_keywords(spec: FunctionSpec, flag: str, names: tuple[str, ...]) -> set[str]:
    """Which of ``names`` the user's function takes as parameters."""
    fn = getattr(_load_module(spec, flag), spec.function, None)
    if not callable(fn):
        return set()
    return set(names) & set(inspect.signature(fn).parameters)


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
                f"{type(exc).__name__}: {_first_line(exc).rstrip('.')}.",
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
        ok, reason = False, _first_line(exc).rstrip(".")
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
