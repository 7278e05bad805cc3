"""The user's code run as gpuscout runs it, whatever framework it builds for: the file imported
under a name of its own, its function called with the keywords it accepts, and every way that
can fail before a measurement turned into one :class:`UserError` naming the file and line.

Framework-free (it imports no Keras, TensorFlow, JAX or PyTorch), so every backend loads a
user's builder the same way: Keras' ``user_model.py`` and PyTorch's ``user_module.py``.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from gpuscout.core.errors import UserError, is_oom
from gpuscout.measure.user_spec import FunctionSpec


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


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (300 characters at most), for a one-line refusal
    that quotes what the user's code raised."""
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
    return f"{type(exc).__name__}{where}: {first_line(exc)}"


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
