"""The results store: save a run the moment it ends, list runs, read one back.

SQLite by default (in the user data directory, or ``--db PATH`` / ``GPUSCOUT_DB``), in WAL mode
with a busy timeout so several processes can write at once, and with real transactions (BEGIN
IMMEDIATE) so a killed writer leaves either a whole run or none.

A team shares one PostgreSQL database instead: ``--db postgresql://user@host/db``. Same
tables, same migrations (PostgreSQL runs DDL inside the transaction too), and an advisory lock
so two gpuscouts opening a new database at once migrate it once.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url, select, text
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError

from gpuscout.errors import UserError
from gpuscout.records import RunResult
from gpuscout.store import schema

BUSY_TIMEOUT_MS = 30_000
MIGRATION_LOCK = 0x6770_7573  # pg_advisory_xact_lock key: "gpus"


def default_target() -> str | Path:
    """GPUSCOUT_DB as given (a SQLite path or a PostgreSQL URL), else the user data dir's file."""
    return os.environ.get("GPUSCOUT_DB") or (
        Path(platformdirs.user_data_dir("gpuscout")) / "runs.sqlite"
    )


def is_url(target: str | Path) -> bool:
    return isinstance(target, str) and "://" in target


def _postgres_url(text: str) -> URL:
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


def _postgres_engine(url: URL) -> Engine:
    try:
        import psycopg  # noqa: F401  (a clear message instead of SQLAlchemy's)
    except ImportError:
        raise UserError(
            "PostgreSQL needs the psycopg driver, which is not installed.",
            "pip install 'psycopg[binary]'.",
        ) from None
    return create_engine(url, pool_pre_ping=True)


@dataclass(frozen=True)
class RunRow:
    """A line of ``runs list``."""

    id: int
    created_at: str
    status: str
    workload: str
    device: str
    precision: str
    xla: bool
    loop: str
    batch_size: int
    samples_per_second: float | None
    stop_reason: str | None
    mode: str = "train"


def _insert(conn: Connection, result: RunResult) -> RunResult:
    sps = result.samples_per_second.median if result.samples_per_second else None
    inserted = conn.execute(
        schema.runs.insert().values(
            created_at=result.created_at,
            status=result.status,
            workload=result.workload,
            device=result.device,
            precision=result.precision,
            xla=result.xla,
            loop=result.loop,
            batch_size=result.batch_size,
            samples_per_second=sps,
            stop_reason=result.stop_reason,
            mode=result.mode,
            result_json="{}",
            step_times_json=json.dumps(result.step_times_s),
            monitor_json=json.dumps(result.monitor_timeline),
        )
    ).inserted_primary_key
    assert inserted is not None
    run_id = inserted[0]
    saved = result.model_copy(update={"id": int(run_id)})
    conn.execute(
        schema.runs.update()
        .where(schema.runs.c.id == run_id)
        .values(result_json=json.dumps(saved.to_json_dict()))
    )
    return saved


def _sqlite_engine(path: Path) -> Engine:
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


class Store:
    """A results database, migrated to the current schema on open."""

    def __init__(self, target: Path | str | None = None) -> None:
        if target is None:
            target = default_target()
        self.path: Path | None = None
        if is_url(target):
            url = _postgres_url(str(target))
            self.where = url.render_as_string(hide_password=True)
            self.engine = _postgres_engine(url)
        else:
            self.path = Path(target)
            self.where = str(self.path)
            self.engine = _sqlite_engine(self._sqlite_path(self.path))
        try:
            with self.engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
                version = schema.current_version(conn)
                if version > schema.LATEST:
                    raise UserError(
                        f"the database '{self.where}' has schema v{version}, newer than this "
                        f"gpuscout understands (v{schema.LATEST}).",
                        "upgrade gpuscout, or pass another --db.",
                    )
                schema.migrate(conn)
        except (OperationalError, DatabaseError) as exc:
            self.engine.dispose()
            reason = " ".join(str(exc.orig).split())  # psycopg's messages span lines
            raise UserError(
                f"cannot open the database '{self.where}': {reason}.",
                "pass a writable gpuscout database with --db, or a new file name.",
            ) from None

    @staticmethod
    def _sqlite_path(path: Path) -> Path:
        if path.exists() and path.is_dir():
            raise UserError(f"--db '{path}' is a directory.", "pass a file path.")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"cannot create the folder for --db '{path}': {exc.strerror}.",
                "pass a writable path with --db or GPUSCOUT_DB.",
            ) from None
        return path

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def save(self, result: RunResult) -> RunResult:
        """Insert a run in one transaction; return it with its id."""
        return self.save_many([result])[0]

    def save_many(self, results: Sequence[RunResult]) -> list[RunResult]:
        """Insert runs in one transaction (all or none); return them with their ids.

        A database that refuses the write (locked past the busy timeout, disk full, read-only,
        server gone) is a :class:`UserError` naming the database and the reason, so ``bench``
        prints one line and ``ScoutCallback`` reports it instead of failing the training."""
        try:
            with self.engine.begin() as conn:
                return [_insert(conn, result) for result in results]
        except (OperationalError, DatabaseError) as exc:
            reason = " ".join(str(exc.orig).split())
            raise UserError(
                f"cannot write to the database '{self.where}': {reason}.",
                "free the disk or the lock, or use another database (--db, GPUSCOUT_DB, or "
                "ScoutCallback(db=...)).",
            ) from None

    def list(self, limit: int | None = None) -> list[RunRow]:
        raw = ("result_json", "step_times_json", "monitor_json")
        cols = [c for c in schema.runs.c if c.name not in raw]
        query = select(*cols).order_by(schema.runs.c.id.desc())
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [RunRow(**row._mapping) for row in conn.execute(query)]

    def get(self, run_id: int) -> RunResult:
        r = schema.runs.c
        query = select(r.result_json, r.step_times_json, r.monitor_json).where(r.id == run_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise UserError(
                f"no run with id {run_id} in '{self.where}'.", "see gpuscout runs list."
            )
        result = RunResult.model_validate(json.loads(row.result_json))
        return result.model_copy(
            update={
                "step_times_s": json.loads(row.step_times_json),
                "monitor_timeline": json.loads(row.monitor_json or "{}"),
            }
        )
