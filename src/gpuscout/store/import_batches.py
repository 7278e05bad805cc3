"""An import's runs inserted in batches inside one transaction, each stored once by its
content hash when asked (``runs import``, ``cloud collect``).

Apart from ``db.py``'s ``Store`` because it is the one part of the store with bookkeeping of
its own (copies met in the file against copies stored before): this module decides what goes
in, and ``Store.import_runs`` turns what the database raises into one line for the user."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Engine, text

from gpuscout.core.records import RunResult
from gpuscout.store.content_hash import content_hash
from gpuscout.store.rows import insert_batch, stored_counts

IMPORT_LOCK = 0x6770_696D  # "gpim": imports that skip stored runs, one at a time (PostgreSQL)
IMPORT_BATCH = 500  # runs validated and inserted per batch of an import (one transaction)


def insert_in_batches(
    engine: Engine,
    results: Iterable[RunResult],
    on_saved: Callable[[RunResult], Any] | None,
    once: bool,
    on_skipped: Callable[[RunResult], Any] | None,
) -> tuple[int, int | None, int | None]:
    """(count, first id, last id) of the runs inserted; see ``Store.import_runs``. Raises what
    the database raises (the transaction rolled back)."""
    count, first, last = 0, None, None
    # copies of each hash stored before this import, and met so far in its file: the k-th
    # copy in the file is skipped while the store held k or more before (two alike runs of
    # one export stay two; the same file again stores nothing)
    before: dict[str, int] = {}
    met: Counter[str] = Counter()

    def store(conn: Any, batch: list[RunResult]) -> None:
        nonlocal count, first, last
        digests = [content_hash(r) for r in batch]
        if once:
            new = [h for h in dict.fromkeys(digests) if h not in before]
            before.update(dict.fromkeys(new, 0) | (stored_counts(conn, new) if new else {}))
            keep = []
            for h, r in zip(digests, batch, strict=True):
                met[h] += 1
                if met[h] <= before[h]:
                    if on_skipped:
                        on_skipped(r)
                    continue
                keep.append((h, r))
            digests, batch = [h for h, _ in keep], [r for _, r in keep]
        for saved in insert_batch(conn, batch, digests):
            count, first, last = count + 1, first or saved.id, saved.id
            if on_saved:
                on_saved(saved)

    with engine.begin() as conn:
        if once and conn.dialect.name == "postgresql":  # SQLite: BEGIN IMMEDIATE
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": IMPORT_LOCK})
        batch: list[RunResult] = []
        for result in results:
            batch.append(result)
            if len(batch) < IMPORT_BATCH:
                continue
            store(conn, batch)
            batch = []
        store(conn, batch)
    return count, first, last
