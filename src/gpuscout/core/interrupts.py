"""Termination signals as Ctrl-C, and a record of them that a library cannot swallow.

SIGTERM and SIGHUP (and SIGINT, for the commands that measure) raise KeyboardInterrupt
wherever the main thread is. Where that is inside code that catches every exception, or turns
it into another one it then handles (an import that falls back when it "fails"), the
interrupt is lost and the command goes on. CI found it: a SIGTERM in the first 0.1 s of
``gpuscout bench``, while its modules were imported, was lost about one time in 80 and the
run measured on for minutes. So every signal is also recorded, and :func:`raise_if_received`
raises it again before anything long starts: a measuring child, a launch's workers, and
between a child's progress messages.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# The signals received since :func:`forget`; the CLI forgets at the start of each command.
received: list[int] = []
_held = False  # inside :func:`held`: a signal is recorded, and raised when it ends


def _interrupt(signum: int, _frame: object) -> None:
    received.append(signum)
    if not _held:
        raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def held() -> Iterator[None]:
    """A few statements no signal may split: one that comes meanwhile is recorded and raised
    as KeyboardInterrupt when they end. ``launch`` starts each worker and records it in one
    such step: a SIGTERM between the two once left a worker the launcher never stopped, which
    wrote its interrupted run into the scratch folder after the launcher had removed it."""
    global _held
    outer = _held
    _held = True
    try:
        yield
    finally:
        _held = outer
    if not outer:
        raise_if_received()


def raise_if_received() -> None:
    """Raise KeyboardInterrupt when a signal came that nothing acted on yet."""
    if received:
        raise KeyboardInterrupt(signal.Signals(received[-1]).name)


def forget() -> None:
    """Start a new command with no signal on record."""
    received.clear()


def stop_on_signals(take_sigint: bool = True) -> Callable[[], None]:
    """A closed terminal or a `kill` ends a measurement like Ctrl-C does: stored, not lost.

    SIGTERM and SIGHUP raise KeyboardInterrupt; SIGHUP stays ignored where it was inherited
    ignored (``nohup``: the user asked to outlive the terminal). ``take_sigint``: SIGINT too,
    even where inherited ignored (a background job of a non-interactive shell), since an
    explicit ``kill -INT`` must stop a measurement; its measuring child then starts with
    SIGINT at its default rather than ignored. Returns what puts the previous handlers back.
    Does nothing outside the main thread, where Python cannot set handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    wanted: dict[signal.Signals, Any] = {signal.SIGTERM: _interrupt}
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        wanted[signal.SIGHUP] = _interrupt
    if take_sigint:
        wanted[signal.SIGINT] = _interrupt
    previous = {
        sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    for sig, handler in wanted.items():
        signal.signal(sig, handler)

    def restore() -> None:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    return restore
