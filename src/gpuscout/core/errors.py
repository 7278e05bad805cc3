"""One error hierarchy, so the CLI can tell a user's mistake from a bug.

A :class:`UserError` is printed as one line (what is wrong, then "To fix: ...") with exit
code 2 and no traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpuscoutError(Exception):
    """Base class of every error gpuscout raises on purpose."""


class UserError(GpuscoutError):
    """Bad input from the user: a value, a path, a name. Exit code 2."""

    exit_code = 2

    def __init__(self, problem: str, fix: str | None = None) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        return f"{self.problem} To fix: {self.fix}" if self.fix else self.problem


def closest(value: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``value``, or None when nothing is close."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    return close[0] if close else None


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return " Did you mean 'x'?" for the closest choice, or "" when nothing is close."""
    close = closest(value, choices)
    return f" Did you mean '{close}'?" if close else ""


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is or wraps a KeyboardInterrupt (or the child's quiet SystemExit on
    SIGINT): a signal that lands while a module is being imported can surface as another
    exception (Python 3.11 turns one raised in a class's ``__set_name__``, such as a dataclass
    field of rich's, into a RuntimeError). Such a failure is an interrupt, not a bug."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt) or (
            isinstance(cause, SystemExit) and cause is not exc
        ):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is a device (or host) running out of memory, in any framework's words:
    TensorFlow's ResourceExhaustedError, XLA's "OOM when allocating", PyTorch's and JAX's "out
    of memory". Stored as an ``oom`` run, never refused as the user's mistake."""
    name = type(exc).__name__
    text = str(exc)
    return (
        name in ("ResourceExhaustedError", "OutOfMemoryError")
        or "OOM when allocating" in text
        or "out of memory" in text.lower()
    )
