"""A client-side deadline on every round trip to PostgreSQL.

The server's ``statement_timeout`` only bounds what the server still does: a backend that hung
or was stopped, a half-dead network path or a proxy that stopped forwarding leave the client
blocked in ``recv`` for ever. So each round trip is also bounded on the client, by the
statement timeout plus :data:`GRACE_S` (the time the server's own cancellation needs to come
back); when the deadline passes, one watchdog thread shuts the connection's socket down, the
blocked ``recv`` returns, psycopg raises, and the error is re-raised as
:class:`DeadlineExceeded`, which ``engines.postgres_engine`` says as one line.

Why the DBAPI level (a psycopg ``Connection`` subclass with its own ``cursor_factory``) rather
than SQLAlchemy's events: ``before/after_cursor_execute`` see statements only, and there is no
event around the DBAPI ``commit()``, the pool's reset-on-return ``rollback()`` or the pre-ping.
Every one of those reaches psycopg as ``cursor.execute``/``executemany``, ``commit`` or
``rollback``, so wrapping those four covers every round trip SQLAlchemy makes after the
connection is open (opening it is bounded by libpq's ``connect_timeout``). Server-side
cursors (``stream_results``) are not wrapped; gpuscout does not use them.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self

import psycopg

GRACE_S = 5.0  # after the statement timeout, for the server's cancellation to come back


class DeadlineExceeded(psycopg.OperationalError):
    """A round trip the server did not answer within the client's deadline (``what``: "a
    statement", "a COMMIT", "a ROLLBACK"). A psycopg error, so SQLAlchemy wraps it and hands
    it to ``handle_error`` like any other."""

    def __init__(self, what: str, limit_s: float) -> None:
        super().__init__(f"no answer to {what} within {limit_s:g} s (the client's deadline)")
        self.what = what
        self.limit_s = limit_s


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection whose COMMIT and ROLLBACK are bounded; its cursors are
    :class:`DeadlineCursor`. ``fired`` says what the watchdog cut, so every later error on
    the (now broken) connection is said as that deadline, not as a lost connection."""

    deadline_s: float = math.inf
    fired: str | None = None

    def commit(self) -> None:
        with watched(self, "a COMMIT"):
            super().commit()

    def rollback(self) -> None:
        with watched(self, "a ROLLBACK"):
            super().rollback()


class DeadlineCursor(psycopg.Cursor[Any]):
    """A client-side cursor whose statements are bounded (results arrive during ``execute``,
    so fetching waits on nothing)."""

    def execute(self, *args: Any, **kwargs: Any) -> Self:
        with watched(self.connection, "a statement"):
            return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> None:
        with watched(self.connection, "a statement"):
            super().executemany(*args, **kwargs)


def connect(deadline_s: float, *args: Any, **kwargs: Any) -> DeadlineConnection:
    """``psycopg.connect`` with every later round trip bounded by ``deadline_s``."""
    conn = DeadlineConnection.connect(*args, cursor_factory=DeadlineCursor, **kwargs)
    conn.deadline_s = deadline_s
    return conn


@contextmanager
def watched(conn: psycopg.Connection[Any], what: str) -> Iterator[None]:
    """Arm the watchdog around one round trip; a psycopg error after it fired is the
    deadline's (the socket was shut down under the blocked call)."""
    if not isinstance(conn, DeadlineConnection):  # a cursor on another connection: unbounded
        yield
        return
    armed = _WATCHDOG.arm(conn, conn.deadline_s, what)
    try:
        yield
    except psycopg.Error as exc:
        if conn.fired is not None and not isinstance(exc, DeadlineExceeded):
            raise DeadlineExceeded(conn.fired, conn.deadline_s) from exc
        raise
    finally:
        _WATCHDOG.disarm(armed)


@dataclass(eq=False)
class _Armed:
    conn: DeadlineConnection
    at: float  # time.monotonic() when it fires
    what: str


class _Watchdog:
    """One daemon thread for the process, sleeping until the nearest armed deadline.

    Arming and disarming take the lock the thread fires under, so a socket is shut down only
    while its round trip is still in flight: never after ``disarm``, when the connection may
    have been closed and its file descriptor reused by something else."""

    def __init__(self) -> None:
        self.reset()
        # A forked child has no watchdog thread, and maybe a lock held by it: start afresh.
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self._cond = threading.Condition()
        self._armed: set[_Armed] = set()
        self._started = False  # the thread starts with the first round trip, not on import

    def arm(self, conn: DeadlineConnection, seconds: float, what: str) -> _Armed:
        armed = _Armed(conn, time.monotonic() + seconds, what)
        with self._cond:
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="gpuscout-db-deadline", daemon=True).start()
            if all(armed.at < a.at for a in self._armed):  # the nearest now: wake to re-time
                self._cond.notify()
            self._armed.add(armed)
        return armed

    def disarm(self, armed: _Armed) -> None:
        with self._cond:
            self._armed.discard(armed)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for armed in [a for a in self._armed if a.at <= now]:
                    self._armed.discard(armed)
                    _cut(armed)
                nearest = min((a.at for a in self._armed), default=None)
                self._cond.wait(None if nearest is None else max(0.0, nearest - now))


def _cut(armed: _Armed) -> None:
    """Shut the connection's socket down (both ways) so its blocked ``recv`` returns. On a
    duplicate of the descriptor: closing the duplicate leaves psycopg's own one to psycopg."""
    conn = armed.conn
    conn.fired = armed.what
    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
    except (OSError, psycopg.Error):
        return  # already closed: nothing is waiting on it
    with sock, contextlib.suppress(OSError):  # not connected any more: the wait ends anyway
        sock.shutdown(socket.SHUT_RDWR)


_WATCHDOG = _Watchdog()
