"""A finished run the database refused is kept as a file ``gpuscout runs import`` reads."""

from __future__ import annotations

import contextlib
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from gpuscout.core.records import RunResult
from gpuscout.store.engines import is_url


def unsaved_file(result: RunResult, db: str) -> Path | None:
    """Keep a finished run the database refused as an import file; the file, or None.

    Tried in the current folder, then the database's folder, then the temp folder: the first
    that takes it. The file is what ``gpuscout runs import`` reads, so nothing is lost."""
    from gpuscout.store.exchange import export_json

    body = export_json([result])
    name = f"gpuscout-unsaved-run-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    here = [Path.cwd()]
    if not is_url(db):
        here.append(Path(db).resolve().parent)
    here.append(Path(tempfile.gettempdir()))
    for folder in here:
        for n in range(100):
            path = folder / (f"{name}.json" if n == 0 else f"{name}-{n}.json")
            try:
                with open(path, "x", encoding="utf-8") as f:
                    f.write(body)
                return path.resolve()
            except FileExistsError:
                continue
            except OSError:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)  # a half-written file (disk full) is no copy
                break
    return None
