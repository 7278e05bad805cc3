"""One exported run file into the store, whole or not at all, each run once: what ``runs
import`` and ``cloud collect`` both do (issue 43), so the two cannot store a file two ways."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.store.db import Store
from gpuscout.store.exchange import iter_runs


@dataclass(frozen=True)
class Imported:
    """What an import of one file stored: new runs (their first and last ids, and every id
    when asked) and runs skipped as already stored."""

    count: int
    skipped: int
    low: int | None
    high: int | None
    ids: list[int]


def import_file(file: str, db: str | None, adopt: bool, keep_ids: bool = False) -> Imported:
    """Import one exported run file (``runs import``, and ``cloud collect`` per file): whole
    or not at all, and each run once: a run already stored (the same content hash) is
    skipped, so a file imported again, or again after an interruption, adds nothing twice."""
    if not file.strip():  # Path("") would be the current directory
        raise UserError(
            "no file to import: the name is empty.",
            "pass a JSON file written by 'gpuscout runs export'.",
        )
    runs = iter_runs(Path(file))
    # The file's own problems (missing, a folder, too big, not JSON, a bad first run) are
    # found before the database is touched; the rest is validated as it is stored.
    first = list(islice(runs, 1))
    # Checked writable now, before thousands of runs are read. A new database is announced
    # once the file is in; a bad file removes it again.
    store = Store(db, adopt=adopt)  # another program's database: only with --yes
    try:
        # One transaction: a bad run anywhere in the file rolls back all before it, and
        # memory holds a batch of runs, not the file.
        ids: list[int] = []  # for --json, as before: the new ids (ints, not the runs)
        skipped: list[None] = []
        count, low, high = store.import_runs(
            chain(first, runs),
            on_saved=lambda r: ids.append(r.id) if keep_ids else None,
            once=True,
            on_skipped=lambda _: skipped.append(None),
        )
    except BaseException:
        _close_unfilled(store, 0)
        raise
    _close_unfilled(store, count)
    return Imported(count, len(skipped), low, high, ids)


def _close_unfilled(store: Any, count: int) -> None:
    """Close; and a database this import created but filled with nothing is removed again:
    a bad or empty file leaves no new empty database behind."""
    store.close()
    if count == 0 and store.created and store.path is not None:
        for extra in ("", "-wal", "-shm", "-journal"):
            Path(f"{store.path}{extra}").unlink(missing_ok=True)


__all__ = ["Imported", "import_file"]
