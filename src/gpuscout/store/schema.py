"""The results database: tables and ordered migrations.

The schema version lives in the database (``gpuscout_meta``). Opening a database applies the
migrations it lacks, in order, inside one transaction, so a failure leaves it as it was. A
database written by a newer gpuscout is refused rather than guessed at.
Each run keeps its full result as JSON (the contract ``bench --json`` prints) beside the
columns that lists and filters need, its raw step times and (v2) the monitor's timeline, and
(v5) its content hash, by which an import stores the same run once.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    inspect,
    select,
)

from gpuscout.core.ranges import NotWhole, whole

metadata = MetaData()

meta = Table(
    "gpuscout_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)


def _short(length: int) -> String:
    """VARCHAR(length) as SQLite has it (which never enforces it); TEXT on PostgreSQL, which
    would refuse a longer device name or status from an imported file."""
    return String(length).with_variant(Text(), "postgresql")


def _v1_run_columns() -> list[Column[object]]:
    """The runs table's columns as schema v1 created them (later versions add to them)."""
    return [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("created_at", _short(40), nullable=False),
        Column("status", _short(16), nullable=False),
        Column("workload", Text, nullable=False),
        Column("device", _short(64), nullable=False),
        Column("precision", _short(32), nullable=False),
        Column("xla", Boolean, nullable=False),
        Column("loop", _short(16), nullable=False),
        Column("batch_size", Integer, nullable=False),
        Column("samples_per_second", Float, nullable=True),
        Column("stop_reason", _short(32), nullable=True),
        Column("result_json", Text, nullable=False),
        Column("step_times_json", Text, nullable=False),
    ]


runs = Table(
    "runs",
    metadata,
    *_v1_run_columns(),
    Column("monitor_json", Text, nullable=True),  # v2: the device monitor's timeline
    Column("mode", _short(16), nullable=False, server_default="train"),  # v3: train | inference
    # v4: the framework Keras measured on, tensorflow | jax (| torch: no migration, same column)
    Column("backend", _short(16), nullable=False, server_default="tensorflow"),
    # v5: SHA-256 of the run's content without its id (store/content_hash.py); NULL only for
    # an older run too damaged to parse
    Column("content_hash", _short(64), nullable=True),
)


def _v1(conn: Connection) -> None:
    meta.create(conn)
    Table("runs", MetaData(), *_v1_run_columns()).create(conn)


def _v2(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN monitor_json TEXT")


def _v3(conn: Connection) -> None:
    """Inference runs beside training runs: every earlier run was a training run."""
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN mode VARCHAR(16) NOT NULL DEFAULT 'train'")


def _v4(conn: Connection) -> None:
    """Runs on JAX beside runs on TensorFlow: every earlier run was measured on TensorFlow."""
    conn.exec_driver_sql(
        "ALTER TABLE runs ADD COLUMN backend VARCHAR(16) NOT NULL DEFAULT 'tensorflow'"
    )


def _v5(conn: Connection) -> None:
    """Each run's content hash, so an import stores a run once. Older runs get theirs here,
    read back as the store reads them; a run too damaged to parse keeps NULL (it is never
    changed or dropped: it only cannot match an imported copy)."""
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN content_hash VARCHAR(64)")
    conn.exec_driver_sql("CREATE INDEX ix_runs_content_hash ON runs (content_hash)")
    _hash_every_run(conn)


def _v6(conn: Connection) -> None:
    """Every run's hash again, its default-valued fields read as absent (``content_hash``):
    v5's hashes changed with each field a later gpuscout added, so a file exported before
    ``compile`` existed would have been imported twice."""
    _hash_every_run(conn)


def _hash_every_run(conn: Connection) -> None:
    """Each run's content hash, read back as the store reads it, a chunk at a time."""
    from gpuscout.store.content_hash import content_hash
    from gpuscout.store.reading import UnreadableRun, parse_run

    r = runs.c
    last = 0
    while True:  # a chunk of runs at a time: memory holds a chunk, not the store
        chunk = conn.execute(
            select(r.id, r.result_json, r.step_times_json, r.monitor_json)
            .where(r.id > last)
            .order_by(r.id)
            .limit(_BACKFILL_CHUNK)
        ).all()
        if not chunk:
            return
        hashes = []
        for row in chunk:
            try:
                hashes.append({"i": row.id, "h": content_hash(parse_run(row.id, "", row))})
            except UnreadableRun:
                continue
        if hashes:
            conn.execute(
                runs.update().where(r.id == bindparam("i")).values(content_hash=bindparam("h")),
                hashes,
            )
        last = chunk[-1].id


_BACKFILL_CHUNK = 500


# (version, migration) in order; a migration takes the database from version-1 to version.
MIGRATIONS: tuple[tuple[int, Callable[[Connection], None]], ...] = (
    (1, _v1),
    (2, _v2),
    (3, _v3),
    (4, _v4),
    (5, _v5),
    (6, _v6),
)
LATEST = MIGRATIONS[-1][0]


class BadVersion(ValueError):
    """The stored schema version is not a whole number (a hand-edited or damaged store): the
    store names it in one line rather than let ``int()`` end the command in a traceback."""

    def __init__(self, value: object) -> None:
        super().__init__(repr(value))
        self.value = value


def current_version(conn: Connection) -> int:
    """The database's schema version; 0 for an empty database. :class:`BadVersion` when the
    stored value is not a whole number >= 0 (read as text: a store edited by hand may hold
    anything there)."""
    if not conn.dialect.has_table(conn, "gpuscout_meta"):
        return 0
    value = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
    if value is None:
        return 0
    try:
        return whole(str(value), 0, 999_999_999)
    except NotWhole:
        raise BadVersion(value) from None


def other_tables(conn: Connection) -> list[str]:
    """Tables in the database that are not gpuscout's: a non-empty list means another
    program's database, which a read must leave alone and a write must not adopt unasked."""
    ours = {meta.name, runs.name}
    names = inspect(conn).get_table_names()
    return sorted(n for n in names if n not in ours and not n.startswith("sqlite_"))


def run_columns(conn: Connection) -> set[str]:
    """The runs table's columns as stored (an older schema has fewer): a read-only store
    reads an old database as it is, the added columns taking their migration defaults."""
    return {c["name"] for c in inspect(conn).get_columns("runs")}


def migrate(conn: Connection) -> int:
    """Apply missing migrations (caller holds a transaction); return the version reached."""
    version = current_version(conn)
    for target, step in MIGRATIONS:
        if target > version:
            step(conn)
            conn.execute(meta.delete().where(meta.c.key == "schema_version"))
            conn.execute(meta.insert().values(key="schema_version", value=str(target)))
            version = target
    return version
