"""Where a results database is and how to open it: SQLite files (checked before SQLite can say
something obscure: a folder, a read-only file or folder, a typo that would create a new file)
and PostgreSQL URLs. The store itself (``db.Store``) only asks for an engine."""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import URL, Engine, create_engine, event, make_url

from gpuscout.core.errors import UserError

BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10.0
STATEMENT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 86_400
CONNECT_TIMEOUT_ENV = "GPUSCOUT_DB_TIMEOUT"
STATEMENT_TIMEOUT_ENV = "GPUSCOUT_DB_STATEMENT_TIMEOUT"
# TCP keepalives (libpq's names): an idle connection whose network path died is noticed by the
# kernel after 30 s + 3 unanswered probes 10 s apart, instead of at the next write's timeout.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
WRITABLE_FIX = (
    "make it writable (its permissions and its folder's), or pass another --db / GPUSCOUT_DB."
)


def default_target() -> str | Path:
    """GPUSCOUT_DB as given (a SQLite path or a PostgreSQL URL), else the user data dir's file."""
    return os.environ.get("GPUSCOUT_DB") or (
        Path(platformdirs.user_data_dir("gpuscout")) / "runs.sqlite"
    )


def database_exists(target: Path | str | None = None) -> bool:
    """Whether there is a database to read (a server URL is assumed to exist): commands that
    merely consult stored runs (``predict``'s calibration) skip a missing one silently, rather
    than create it or fail."""
    if target is None:
        target = default_target()
    return is_url(target) or Path(target).expanduser().exists()


def is_url(target: str | Path) -> bool:
    return isinstance(target, str) and "://" in target


def postgres_url(text: str) -> URL:
    """A PostgreSQL URL with the psycopg (v3) driver named; anything else is refused.

    A ``password=`` query parameter is moved into the URL's password, so that every message
    that shows the URL (``render_as_string(hide_password=True)``) masks it wherever the user
    wrote it; libpq receives it the same either way."""
    try:
        url = make_url(text)
    except ValueError:  # ArgumentError is one; a non-numeric port is a bare ValueError
        url = None
    if url is None or url.get_backend_name() != "postgresql":
        shown = text.split("://")[0]
        raise UserError(
            f"--db '{shown}://...' is not a database gpuscout can use (or its port is not a "
            "number).",
            "pass a SQLite file path, or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE.",
        )
    query = dict(url.query)
    if "password" in query:
        password = query.pop("password")
        url = url.set(password=password if isinstance(password, str) else password[-1])
        url = url.set(query=query)
    return url.set(drivername="postgresql+psycopg")


def shown_url(url: URL) -> str:
    """The URL as every message shows it: the password masked, the driver not named."""
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)


def _seconds(name: str, text: str, where: str) -> float:
    """A timeout in seconds from the URL or the environment, refused in one line if it is not
    a positive finite number (a typo must not silently mean "wait forever")."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT_S:
        raise UserError(
            f"{name} '{text}' ({where}) is not a timeout gpuscout can use.",
            f"give a number of seconds above 0 and at most {MAX_TIMEOUT_S:,}.",
        )
    return value


def postgres_timeouts(url: URL) -> tuple[float, float]:
    """(connect, statement) timeouts in seconds: a server that accepts the connection and never
    answers must end a command with a line, not hang it. The URL's own ``connect_timeout``
    (libpq's name) wins over ``GPUSCOUT_DB_TIMEOUT``; ``GPUSCOUT_DB_STATEMENT_TIMEOUT`` bounds
    each statement on the server (the largest import's is far below the default)."""
    shown = shown_url(url)
    given = url.query.get("connect_timeout")
    if isinstance(given, str):
        connect = _seconds("connect_timeout", given, f"in {shown}")
    else:
        env = os.environ.get(CONNECT_TIMEOUT_ENV)
        connect = (
            _seconds(CONNECT_TIMEOUT_ENV, env, "from the environment") if env else CONNECT_TIMEOUT_S
        )
    env = os.environ.get(STATEMENT_TIMEOUT_ENV)
    statement = (
        _seconds(STATEMENT_TIMEOUT_ENV, env, "from the environment") if env else STATEMENT_TIMEOUT_S
    )
    return connect, statement


def postgres_engine(url: URL) -> Engine:
    """An engine on which no network wait is unbounded: libpq's ``connect_timeout`` bounds
    opening a connection, the server's ``statement_timeout`` a statement it is running, and
    the client's deadline (``deadline.py``: the statement timeout + ``deadline.GRACE_S``)
    every round trip, COMMIT, ROLLBACK and the pool's pre-ping included, for a server that
    stopped answering (a hung backend, a dead path, a proxy that stopped forwarding). TCP
    keepalives and ``tcp_user_timeout`` (unacknowledged data dropped after the same deadline)
    let the kernel notice a dead path too."""
    try:
        import psycopg  # noqa: F401  (a clear message instead of SQLAlchemy's)
    except ImportError:
        raise UserError(
            "PostgreSQL needs the psycopg driver, which is not installed.",
            "pip install 'psycopg[binary]'.",
        ) from None
    from gpuscout.store import deadline

    connect_s, statement_s = postgres_timeouts(url)
    deadline_s = statement_s + deadline.GRACE_S
    shown = shown_url(url)
    # libpq counts connect_timeout in whole seconds (at least 2); the statement timeout is set
    # per session, so a query the server never finishes is cancelled by the server itself.
    query = {k: v for k, v in url.query.items() if k != "connect_timeout"}
    engine = create_engine(
        url.set(query=query),
        pool_pre_ping=True,
        use_native_hstore=False,  # no hstore lookup (a transaction of its own) on connect
        connect_args={
            "connect_timeout": max(2, math.ceil(connect_s)),
            "options": f"-c statement_timeout={round(statement_s * 1000)}",
            **KEEPALIVES,
            "tcp_user_timeout": math.ceil(deadline_s * 1000),
        },
    )

    @event.listens_for(engine, "do_connect")
    def _bounded(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        return deadline.connect(deadline_s, *cargs, **cparams)

    @event.listens_for(engine, "handle_error")
    def _timeouts(context: Any) -> UserError | None:
        exc = context.original_exception
        if isinstance(exc, deadline.DeadlineExceeded):
            context.is_disconnect = True  # the socket is shut: never hand the connection out
            if context.is_pre_ping:
                return None  # the pool opens a new connection (bounded by connect_timeout)
        return _timeout_error(exc, shown, connect_s, statement_s)

    return engine


def _timeout_error(
    exc: BaseException, shown: str, connect_s: float, statement_s: float
) -> UserError | None:
    """A timeout said as one line naming the server and the limit; other errors unchanged."""
    from psycopg import errors

    from gpuscout.store.deadline import DeadlineExceeded

    if isinstance(exc, DeadlineExceeded):
        grace = exc.limit_s - statement_s
        outcome = (  # COMMIT sent, its answer lost: the server may have committed (whole)
            "; whether it was stored is unknown (all or nothing): check before repeating it"
            if exc.what == "a COMMIT"
            else ""
        )
        return UserError(
            f"the database at {shown} did not answer within {exc.limit_s:g} s ({exc.what}, "
            f"bounded by {STATEMENT_TIMEOUT_ENV} {statement_s:g} s + {grace:g} s grace){outcome}.",
            f"check that the server is up and reachable, or allow longer with "
            f"{STATEMENT_TIMEOUT_ENV}=SECONDS.",
        )
    if isinstance(exc, errors.ConnectionTimeout):
        waited, what, env = connect_s, "the connection", CONNECT_TIMEOUT_ENV
        fix = f"{env}=SECONDS or the URL's connect_timeout"
    elif isinstance(exc, errors.QueryCanceled) and "statement timeout" in str(exc):
        waited, what, env = statement_s, "a statement", STATEMENT_TIMEOUT_ENV
        fix = f"{env}=SECONDS"
    else:
        return None
    return UserError(
        f"the database at {shown} did not answer within {waited:g} s ({what}).",
        f"check that the server is up and reachable, or allow longer with {fix}.",
    )


def sqlite_engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # let SQLAlchemy's BEGIN below own transactions
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def sqlite_readonly_engine(path: Path) -> Engine:
    """A database gpuscout may not write (mode 444, a read-only folder) opened to read only.

    ``mode=ro`` reads a WAL database when SQLite can still create its -shm file beside it;
    in a read-only folder it cannot, and ``immutable=1`` (no locks, no -shm) is the only way
    in: nobody can be writing a database whose folder nobody may write."""
    uri = path.resolve().as_uri()

    def connect() -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        conn.isolation_level = None
        return conn

    return create_engine("sqlite://", creator=connect)


def writable(path: Path) -> bool:
    """Whether this process may write ``path`` (a file or a folder). ``os.access`` asks the
    kernel with the real uid: root passes, as its writes do."""
    return os.access(path, os.W_OK)


def check_sqlite_path(path: Path, readonly: bool, create: bool) -> bool:
    """Refuse what cannot work before SQLite says something obscure; whether to open the
    file read-only (only when asked to read and the file or its folder may not be written)."""
    shown = path.resolve()
    if path.exists() and path.is_dir():
        raise UserError(f"--db '{path}' is a directory.", "pass a file path.")
    if not path.exists():
        if not create:
            raise UserError(
                f"no results database at '{shown}' (nothing was ever stored there).",
                "check --db and GPUSCOUT_DB; 'gpuscout bench' creates the database on its "
                "first run.",
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"cannot create the folder for --db '{path}': {exc.strerror}.",
                "pass a writable path with --db or GPUSCOUT_DB.",
            ) from None
        if not writable(path.parent):
            raise UserError(
                f"cannot create the database '{shown}': its folder is not writable.",
                "pass a path in a writable folder with --db or GPUSCOUT_DB.",
            )
        return False
    if not writable(path):
        if readonly:
            return True
        raise UserError(f"the database '{shown}' is read-only.", WRITABLE_FIX)
    if not writable(shown.parent):
        if readonly:
            return True
        raise UserError(
            f"the database '{shown}' is in a read-only folder, where SQLite cannot write "
            "its -wal and -shm files.",
            WRITABLE_FIX,
        )
    return False
