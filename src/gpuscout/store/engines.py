"""Where a results database is and how to open it: SQLite files (checked before SQLite can say
something obscure: a folder, a read-only file or folder, a typo that would create a new file)
and PostgreSQL URLs. The store itself (``db.Store``) only asks for an engine."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError

from gpuscout.errors import UserError

BUSY_TIMEOUT_MS = 30_000
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
    return is_url(target) or Path(target).exists()


def is_url(target: str | Path) -> bool:
    return isinstance(target, str) and "://" in target


def postgres_url(text: str) -> URL:
    """A PostgreSQL URL with the psycopg (v3) driver named; anything else is refused."""
    try:
        url = make_url(text)
    except ArgumentError:
        url = None
    if url is None or url.get_backend_name() != "postgresql":
        shown = text.split("://")[0]
        raise UserError(
            f"--db '{shown}://...' is not a database gpuscout can use.",
            "pass a SQLite file path, or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE.",
        )
    return url.set(drivername="postgresql+psycopg")


def postgres_engine(url: URL) -> Engine:
    try:
        import psycopg  # noqa: F401  (a clear message instead of SQLAlchemy's)
    except ImportError:
        raise UserError(
            "PostgreSQL needs the psycopg driver, which is not installed.",
            "pip install 'psycopg[binary]'.",
        ) from None
    return create_engine(url, pool_pre_ping=True)


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
