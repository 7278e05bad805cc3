"""Writing a report or an export to disk whole: a temporary file beside it, then a rename.

A failure half-way (a full disk, Ctrl-C) leaves the previous file as it was, never a truncated
one that a browser or a teammate would take for the report.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gpuscout.core.errors import UserError


def _mode(target: Path) -> int:
    """The file's current permissions, or what a plain ``open`` would give it (umask)."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


SQLITE_HEADER = b"SQLite format 3\x00"


def _is_sqlite(target: Path) -> bool:
    """Whether ``target`` is an existing SQLite database: the last guard of a store, whatever
    path (a link, ``GPUSCOUT_DB`` set differently) led here, since no report is one."""
    if not target.is_file():  # a FIFO would block the read; a folder is said elsewhere
        return False
    try:
        with open(target, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def write_whole(path: Path, text: str, flag: str) -> None:
    """Write ``text`` to ``path`` atomically; a path that cannot be written is the user's."""
    target = path.expanduser()
    if target.is_dir():
        raise UserError(f"{flag} '{path}' is a folder.", "pass a file name, e.g. report.html.")
    if _is_sqlite(target):
        raise UserError(
            f"{flag} '{path}' is a SQLite database (a results store?); a report or an export "
            "never replaces one.",
            f"pass another file to {flag}.",
        )
    tmp_name = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
        os.chmod(tmp_name, _mode(target))  # mkstemp's 0600 would hide a report from its readers
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as exc:
        raise UserError(
            f"cannot write {flag} '{path}': {exc.strerror}.", "pass a writable file path."
        ) from None
    finally:
        if tmp_name is not None:
            Path(tmp_name).unlink(missing_ok=True)
