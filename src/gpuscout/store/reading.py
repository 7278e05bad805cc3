"""Reading the store defensively: a stored run that does not parse, a schema version that is
not a number, a path that is a symlink loop or no longer names the file that was opened.

One damaged row (a hand edit, another tool's write, a disk error) must cost that row only:
``runs show`` of it says so in one line, while ``runs export``, ``report`` and ``predict``
name it, say how to remove it, and go on with the others.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine

from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult

SKIPS_SHOWN = 10  # unreadable runs named one by one; beyond that, counted


class UnreadableRun(UserError):
    """A stored run whose JSON does not parse as a run (its id is ``run_id``)."""

    def __init__(self, run_id: int, where: str, reason: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id} in '{where}' is unreadable: {reason}.",
            f"remove it with gpuscout runs delete {run_id} --db {where} (the other runs are "
            "unaffected).",
        )


def _reason(exc: Exception) -> str:
    """What is wrong with a stored run, short: the JSON error's place or the first field."""
    if isinstance(exc, json.JSONDecodeError):
        return f"its stored JSON is not valid JSON ({exc.msg}, at character {exc.pos})"
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the whole run)"
        more = f" and {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
        return f"its stored JSON is not a run (field '{where}': {first['msg']}{more})"
    return f"its stored data is not a run ({' '.join(str(exc).split())[:120]})"


def parse_run(run_id: int, where: str, row: Any) -> RunResult:
    """The run stored in ``row`` (result, step times, monitor JSON); :class:`UnreadableRun`
    naming the run and what is wrong when any part does not parse."""
    try:
        result = RunResult.model_validate(json.loads(row.result_json))
        steps = json.loads(row.step_times_json)
        monitor = json.loads(getattr(row, "monitor_json", None) or "{}")
        if not isinstance(steps, list) or not all(
            isinstance(s, int | float) and not isinstance(s, bool) for s in steps
        ):
            raise ValueError("its stored step times are not a list of numbers")
        if not isinstance(monitor, dict):
            raise ValueError("its stored monitor timeline is not a JSON object")
    except (ValueError, TypeError, RecursionError) as exc:
        reason = _reason(exc) if not str(exc).startswith("its stored") else str(exc)
        raise UnreadableRun(run_id, where, reason) from None
    return result.model_copy(update={"step_times_s": steps, "monitor_timeline": monitor})


def say_skipped(skipped: Iterable[UnreadableRun]) -> None:
    """Name each unreadable run skipped (the first ``SKIPS_SHOWN``) on stderr, with its fix."""
    bad = list(skipped)
    for exc in bad[:SKIPS_SHOWN]:
        print(f"gpuscout: skipped {exc.problem} To fix: {exc.fix}", file=sys.stderr)
    if len(bad) > SKIPS_SHOWN:
        ids = ",".join(str(e.run_id) for e in bad)
        print(
            f"gpuscout: skipped {len(bad) - SKIPS_SHOWN:,} more unreadable runs; remove all "
            f"{len(bad):,} with gpuscout runs delete {ids}",
            file=sys.stderr,
        )


def check_not_a_loop(path: Path) -> None:
    """A ``--db`` that is a symlink loop: one line, not ``RuntimeError: Symlink loop``."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            return  # missing and the rest: the store's own checks say those
        raise UserError(
            f"--db '{path}' is a symbolic link that loops (it never reaches a file).",
            "pass the database file itself, or fix the link.",
        ) from None


def foreign_refusal(where: str, others: list[str], fix: str) -> None:
    """UserError when ``others`` (tables not gpuscout's) is not empty: another program's
    SQLite database is not ours to add tables to; the message names them and what would go in."""
    if others:
        shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
        raise UserError(
            f"'{where}' is another program's SQLite database (tables: {shown}), not a gpuscout "
            "results database; storing runs there would add gpuscout's tables (gpuscout_meta, "
            "runs) to it.",
            fix,
        )


@contextmanager
def closing(engine: Engine) -> Iterator[Engine]:
    """An engine disposed of when the block ends (a look at a file before opening it)."""
    try:
        yield engine
    finally:
        engine.dispose()


def identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) that ``path`` names now; None when it names nothing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
