"""A run as the store's tables hold it: the listed columns (``RunRow``, all ``runs list``
reads) and the insert of whole runs, one or a batch, inside the caller's transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select

from gpuscout.core.records import RunResult
from gpuscout.store import schema
from gpuscout.store.content_hash import content_hash


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
    backend: str = "tensorflow"


def _row(result: RunResult, run_id: int | None, digest: str | None = None) -> dict[str, Any]:
    """The runs table's values for a run; its JSON holds ``run_id`` when it is known;
    ``digest``: its content hash, when the caller has it already."""
    sps = result.samples_per_second.median if result.samples_per_second else None
    saved = result if run_id is None else result.model_copy(update={"id": run_id})
    return {
        **({"id": run_id} if run_id is not None else {}),
        "created_at": result.created_at,
        "status": result.status,
        "workload": result.workload,
        "device": result.device,
        "precision": result.precision,
        "xla": result.xla,
        "loop": result.loop,
        "batch_size": result.batch_size,
        "samples_per_second": sps,
        "stop_reason": result.stop_reason,
        "mode": result.mode,
        "backend": result.backend,
        "result_json": "{}" if run_id is None else json.dumps(saved.to_json_dict()),
        "step_times_json": json.dumps(result.step_times_s),
        "monitor_json": json.dumps(result.monitor_timeline),
        "content_hash": digest or content_hash(result),
    }


def stored_counts(conn: Connection, hashes: Sequence[str]) -> dict[str, int]:
    """How many stored runs have each of these content hashes (absent: none). Two runs may
    be alike on purpose (``bench`` stores every measurement), so an import counts copies."""
    h = schema.runs.c.content_hash
    query = select(h, func.count()).where(h.in_(list(hashes))).group_by(h)
    return {row[0]: int(row[1]) for row in conn.execute(query)}


def insert_batch(
    conn: Connection, batch: Sequence[RunResult], digests: Sequence[str] | None = None
) -> list[RunResult]:
    """Insert runs, with their ids in their JSON. On SQLite, whose BEGIN IMMEDIATE holds the
    write lock for the whole transaction, the ids are the next ones after the largest, and
    the batch is one executemany (an import of 10,000 runs: seconds, not a minute); elsewhere
    the database's sequence gives each id, one insert at a time. ``digests``: the runs'
    content hashes, where the caller computed them already (an import that skips stored
    runs)."""
    hashes = list(digests) if digests is not None else [content_hash(r) for r in batch]
    if conn.dialect.name != "sqlite" or not batch:
        return [insert(conn, r, h) for r, h in zip(batch, hashes, strict=True)]
    top = conn.execute(select(func.max(schema.runs.c.id))).scalar() or 0
    ids = range(int(top) + 1, int(top) + 1 + len(batch))
    rows = [_row(r, i, h) for r, i, h in zip(batch, ids, hashes, strict=True)]
    conn.execute(schema.runs.insert(), rows)
    return [r.model_copy(update={"id": i}) for r, i in zip(batch, ids, strict=True)]


def insert(conn: Connection, result: RunResult, digest: str | None = None) -> RunResult:
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
            backend=result.backend,
            result_json="{}",
            step_times_json=json.dumps(result.step_times_s),
            monitor_json=json.dumps(result.monitor_timeline),
            content_hash=digest or content_hash(result),
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
