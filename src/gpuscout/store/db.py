"""The results store: save a run the moment it ends, list runs, read one back.

SQLite by default (in the user data directory, or ``--db PATH`` / ``GPUSCOUT_DB``), in WAL mode
with a busy timeout so several processes can write at once, and with real transactions (BEGIN
IMMEDIATE) so a killed writer leaves either a whole run or none.

A team shares one PostgreSQL database instead: ``--db postgresql://user@host/db``. Same
tables, same migrations (PostgreSQL runs DDL inside the transaction too), and an advisory lock
so two gpuscouts opening a new database at once migrate it once.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import (
    func,
    select,
    text,
    update,
)
from sqlalchemy.exc import DatabaseError, OperationalError

from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult
from gpuscout.store import schema
from gpuscout.store.engines import (
    WRITABLE_FIX,
    check_sqlite_path,
    default_target,
    is_url,
    postgres_engine,
    postgres_url,
    sqlite_engine,
    sqlite_readonly_engine,
)
from gpuscout.store.import_batches import IMPORT_BATCH, insert_in_batches
from gpuscout.store.reading import (
    UnreadableRun,
    check_not_a_loop,
    closing,
    foreign_refusal,
    identity,
    parse_run,
    say_skipped,
)
from gpuscout.store.rows import RunRow
from gpuscout.store.unsaved import unsaved_file

MIGRATION_LOCK = 0x6770_7573  # pg_advisory_xact_lock key: "gpus"
LIST_SKIP = ("result_json", "step_times_json", "monitor_json", "content_hash")


class Store:
    """A results database, migrated to the current schema on open.

    Opened to write (the default: ``bench``, ``import``, ``delete``), a database is checked
    to take a write at once, by a real write rolled back, so a read-only file or folder is
    refused before minutes of measuring, not after. ``create=False``: a missing SQLite file
    is an error rather than a new database. ``readonly=True`` (``runs list``, ``report``,
    ...): never creates a file, never writes, and reads a database that may not be written;
    a missing file is "no results database at PATH", so a typo in ``--db`` is said, not
    shown as an empty store. Read-only also means never migrating nor adding tables: a file
    with no tables at all (0 bytes) reads as a store with no runs, another program's SQLite
    database is refused, and an older gpuscout store is read as it is. A database it creates
    is announced on stderr (``announce``) when the first run is stored in it, so a typo in
    ``--db`` is seen the first time. ``adopt=False`` (``runs import`` without ``--yes``):
    another program's SQLite database is refused rather than given gpuscout's tables.
    """

    def __init__(
        self,
        target: Path | str | None = None,
        *,
        readonly: bool = False,
        create: bool = True,
        announce: bool = True,
        adopt: bool = True,
    ) -> None:
        if target is None:
            target = default_target()
        self.path: Path | None = None
        self.readonly = readonly
        self.created = False
        self.empty = False  # read-only: a database with no tables at all, so no runs
        self._columns: set[str] | None = None  # read-only, an older schema: its run columns
        self._identity: tuple[int, int] | None = None  # the SQLite file opened (dev, inode)
        sqlite_ro = False
        if is_url(target):
            url = postgres_url(str(target))
            self.where = url.render_as_string(hide_password=True)
            self.engine = postgres_engine(url)
        else:
            # '~' expanded as a shell would: GPUSCOUT_DB='~/runs.sqlite' from a quoted export,
            # a .env file or a container's environment reaches here unexpanded (issue 43)
            self.path = Path(target).expanduser()
            self.where = str(self.path)
            check_not_a_loop(self.path)
            sqlite_ro = check_sqlite_path(self.path, readonly, create and not readonly) or readonly
            if sqlite_ro:
                self.engine = sqlite_readonly_engine(self.path)
            else:
                self.created = not self.path.exists()
                self.engine = sqlite_engine(self.path)
        adopt_fix = "pass --yes to add them, or another --db."
        try:
            if not adopt and self.path is not None and self.path.exists():  # before WAL mode
                with closing(sqlite_readonly_engine(self.path)) as ro, ro.connect() as conn:
                    self._refuse_foreign(conn, adopt_fix)
            if readonly:  # SQLite or PostgreSQL: nothing created, nothing migrated
                self._check_version_readonly()
            else:
                with self.engine.begin() as conn:
                    if conn.dialect.name == "postgresql":
                        conn.execute(
                            text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK}
                        )
                    self._check_version(self._version(conn))
                    if not adopt:
                        self._refuse_foreign(conn, adopt_fix)
                    schema.migrate(conn)
                if not readonly:
                    self._probe_write()
        except (OperationalError, DatabaseError) as exc:
            self.engine.dispose()
            reason = " ".join(str(exc.orig).split())  # psycopg's messages span lines
            if self.created and self.path is not None:
                self.path.unlink(missing_ok=True)  # not a new empty file left by a failure
            raise UserError(
                f"cannot open the database '{self.where}': {reason}.",
                "pass a writable gpuscout database with --db, or a new file name.",
            ) from None
        except UserError:
            self.engine.dispose()
            raise
        self._announce = announce and self.created
        if self.path is not None and not sqlite_ro:
            self._identity = identity(self.path)

    def _version(self, conn: Any) -> int:
        """The stored schema version; a value that is not one is one line naming it."""
        try:
            return schema.current_version(conn)
        except schema.BadVersion as exc:
            raise UserError(
                f"the database '{self.where}' has a schema version gpuscout cannot read: "
                f"{ascii(exc.value)[:60]} (in its gpuscout_meta table).",
                "restore it from a backup or a 'runs export', or pass another --db.",
            ) from None

    def _refuse_foreign(self, conn: Any, fix: str) -> None:
        """Another program's SQLite database (tables, none of them gpuscout's) is not ours to
        add tables to: refused, naming its tables and what gpuscout would add."""
        if self._version(conn) == 0:
            foreign_refusal(self.where, schema.other_tables(conn), fix)

    def _announce_new(self) -> None:
        """Say once, when the first run is in, that the database is new, and where: a typo in
        --db is seen then, not later as runs missing from the usual database. (Not at open: a
        command refused before it stores anything says only why.)"""
        if self._announce and self.path is not None:
            self._announce = False
            print(
                f"gpuscout: new results database at {self.path.resolve()} (none existed there)",
                file=sys.stderr,
            )

    def _check_version(self, version: int) -> None:
        if version > schema.LATEST:
            raise UserError(
                f"the database '{self.where}' has schema v{version}, newer than this "
                f"gpuscout understands (v{schema.LATEST}).",
                "upgrade gpuscout, or pass another --db.",
            )

    def _check_version_readonly(self) -> None:
        """Read as it is: nothing created, nothing migrated (the next write upgrades it)."""
        with self.engine.connect() as conn:
            version = self._version(conn)
            self._check_version(version)
            if version == 0:
                self._refuse_foreign(conn, "pass a gpuscout results database with --db.")
                self.empty = True  # no tables at all (an empty file): no runs
            elif version < schema.LATEST:
                self._columns = schema.run_columns(conn)

    def _stored_columns(self, skip: tuple[str, ...] = ()) -> builtins.list[Any]:
        """The runs table's columns this database has, less ``skip``."""
        return [
            c
            for c in schema.runs.c
            if c.name not in skip and (self._columns is None or c.name in self._columns)
        ]

    def _check_same_file(self) -> None:
        """The path must still name the SQLite file opened: a store removed or replaced
        meanwhile (a builder, a cleanup job) would take the run into an unlinked file."""
        gone = self.path is not None and identity(self.path) != self._identity
        if self._identity is not None and gone:
            raise UserError(
                f"the database '{self.where}' was removed or replaced while the run was "
                "measured, so the run was not stored there.",
                "check what removed it (a --model builder, a cleanup job)",
            )

    def _probe_write(self) -> None:
        """A real write, rolled back: SQLite opens a read-only file without complaint and
        even begins a write transaction on it; only writing a page fails."""
        try:
            with self.engine.connect() as conn:
                trans = conn.begin()
                try:
                    conn.execute(
                        update(schema.meta)
                        .where(schema.meta.c.key == "schema_version")
                        .values(value=schema.meta.c.value)
                    )
                finally:
                    trans.rollback()
        except (OperationalError, DatabaseError) as exc:
            reason = " ".join(str(exc.orig).split())
            raise UserError(
                f"cannot write to the database '{self.where}': {reason}.", WRITABLE_FIX
            ) from None

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def save(self, result: RunResult) -> RunResult:
        """Insert a finished run in one transaction; return it with its id.

        The run has been measured (minutes, maybe hours): when the database refuses it after
        all (disk full, locked past the busy timeout, permissions changed, server down), it is
        written to an import file instead and the error names that file."""
        try:
            self._check_same_file()
            return self.save_many([result])[0]
        except UserError as exc:
            kept = unsaved_file(result, self.where)
            if kept is None:
                raise UserError(
                    f"{exc.problem.rstrip('.')}; the run could not be kept in a file either "
                    "(no writable folder).",
                    exc.fix,
                ) from None
            raise UserError(
                f"{exc.problem.rstrip('.')}; the run was kept in {kept}.",
                f"{exc.fix.rstrip('.') if exc.fix else 'fix the database'}, then "
                f"gpuscout runs import {kept}",
            ) from None
        except Exception:  # a bug: keep its traceback, but not at the price of the run
            kept = unsaved_file(result, self.where)
            print(f"gpuscout: the run was not stored; it was kept in {kept}", file=sys.stderr)
            raise

    def save_many(self, results: Iterable[RunResult]) -> list[RunResult]:
        """Insert runs in one transaction (all or none); return them with their ids.

        A database that refuses the write (locked past the busy timeout, disk full, read-only,
        server gone) is a :class:`UserError` naming the database and the reason, so ``bench``
        prints one line and ``ScoutCallback`` reports it instead of failing the training."""
        saved: list[RunResult] = []
        self.import_runs(results, on_saved=saved.append)
        return saved

    def import_runs(
        self,
        results: Iterable[RunResult],
        on_saved: Any = None,
        *,
        once: bool = False,
        on_skipped: Any = None,
    ) -> tuple[int, int | None, int | None]:
        """Insert runs as they come, in one transaction: (count, first id, last id).

        ``results`` may be a generator that validates as it goes (an import file): whatever it
        raises rolls back every run inserted before, so a file is stored whole or not at all,
        while memory holds one batch of runs, not the file's thousands. ``once`` (``runs
        import``, ``cloud collect``): the k-th run of ``results`` with a content hash is
        skipped (``on_skipped(run)``) while the store held k or more runs with it before, so
        importing a file again, or again after an interruption, stores nothing twice, while
        two alike runs of one file (``bench`` stores every measurement) stay two. (A
        measurement just made is new by construction and stored as given.)"""
        try:
            count, first, last = insert_in_batches(self.engine, results, on_saved, once, on_skipped)
            if count:
                self._announce_new()
        except (OperationalError, DatabaseError) as exc:
            reason = " ".join(str(exc.orig).split())
            raise UserError(
                f"cannot write to the database '{self.where}': {reason}.",
                "free the disk or the lock, or use another database (--db, GPUSCOUT_DB, or "
                "ScoutCallback(db=...)).",
            ) from None
        return count, first, last

    def count(self) -> int:
        """How many runs are stored (``runs list`` says how many it did not show)."""
        if self.empty:
            return 0
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(schema.runs)).scalar() or 0)

    def list(self, limit: int | None = None) -> list[RunRow]:
        """The runs' list columns, newest first: never their JSON, steps or timelines."""
        if self.empty:
            return []
        cols = self._stored_columns(LIST_SKIP)
        query = select(*cols).order_by(schema.runs.c.id.desc())
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [RunRow(**row._mapping) for row in conn.execute(query)]

    def rows(self, ids: Sequence[int]) -> builtins.list[RunRow]:
        """The list rows of these ids (in the order given); UserError naming every unknown id."""
        r = schema.runs.c
        cols = self._stored_columns(LIST_SKIP)
        found: dict[int, RunRow] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(ids) if not self.empty else 0, IMPORT_BATCH):
                chunk = list(ids[i : i + IMPORT_BATCH])
                for row in conn.execute(select(*cols).where(r.id.in_(chunk))):
                    found[row.id] = RunRow(**row._mapping)
        missing = [i for i in dict.fromkeys(ids) if i not in found]
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
            which = f"run with id {shown}" if len(missing) == 1 else f"runs with ids {shown}"
            raise UserError(f"no {which} in '{self.where}'.", "see gpuscout runs list.")
        return [found[i] for i in dict.fromkeys(ids)]

    def delete(self, ids: Sequence[int]) -> int:
        """Delete these runs in one transaction; all of them exist or nothing is deleted."""
        wanted = list(dict.fromkeys(ids))
        self.rows(wanted)  # every id known, else nothing is touched
        r = schema.runs.c
        try:
            with self.engine.begin() as conn:
                deleted = 0
                for i in range(0, len(wanted), IMPORT_BATCH):
                    chunk = wanted[i : i + IMPORT_BATCH]
                    deleted += conn.execute(schema.runs.delete().where(r.id.in_(chunk))).rowcount
                if deleted != len(wanted):  # another process deleted some meanwhile
                    raise UserError(
                        f"some of the runs changed in '{self.where}' while deleting; nothing was "
                        "deleted.",
                        "run the command again.",
                    )
        except (OperationalError, DatabaseError) as exc:
            reason = " ".join(str(exc.orig).split())
            raise UserError(
                f"cannot write to the database '{self.where}': {reason}.", WRITABLE_FIX
            ) from None
        return deleted

    def get(self, run_id: int) -> RunResult:
        """One run in full; :class:`UnreadableRun` (one line, with the ``runs delete`` that
        removes it) when what is stored for it does not parse."""
        row = None
        if not self.empty:
            raw = ("result_json", "step_times_json", "monitor_json")
            cols = [c for c in self._stored_columns() if c.name in raw]
            with self.engine.connect() as conn:
                row = conn.execute(select(*cols).where(schema.runs.c.id == run_id)).first()
        if row is None:
            raise UserError(
                f"no run with id {run_id} in '{self.where}'.", "see gpuscout runs list."
            )
        return parse_run(run_id, self.where, row)

    def load(self, ids: Iterable[int]) -> builtins.list[RunResult]:
        """These runs in full, in the order given, skipping any that does not parse: each is
        named on stderr with the ``runs delete`` that removes it, so one damaged row never
        keeps the others from an export, a report or a prediction."""
        good: builtins.list[RunResult] = []
        skipped: builtins.list[UnreadableRun] = []
        for i in ids:
            try:
                good.append(self.get(i))
            except UnreadableRun as exc:
                skipped.append(exc)
        say_skipped(skipped)
        return good
