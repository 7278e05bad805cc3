"""Output files checked before the work that fills them, not after.

``scout`` measures for minutes and ``report`` may read thousands of runs before a file is
written; a path that cannot take the file (a folder, a parent that is a file, a read-only
place) must fail at once with one line, not after that work. The check asks what
:func:`gpuscout.report.files.write_whole` will do: it creates missing parent folders and
writes a temporary file beside the target before renaming it, so what must hold is that the
nearest existing folder on the way takes a new file. Nothing is left behind by the check.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gpuscout.core.errors import UserError


def check_output_file(path: Path, flag: str) -> None:
    """UserError (one line naming ``flag`` and ``path``) unless ``path`` can be written."""
    target = path.expanduser()
    if target.is_dir():
        raise UserError(f"{flag} '{path}' is a folder.", "pass a file name, e.g. report.html.")
    if target.exists() and not target.is_file():
        raise UserError(
            f"{flag} '{path}' is not a regular file (a device, a pipe or a socket).",
            "pass a file name, e.g. report.html.",
        )
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UserError(
            f"cannot write {flag} '{path}': '{folder}' is a file, not a folder.",
            "pass a path whose folders are folders.",
        )
    try:  # the real test: os.access says yes to root on a read-only file system
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gpuscout-write-check-")
    except OSError as exc:
        raise UserError(
            f"cannot write {flag} '{path}': '{folder}' takes no new file ({exc.strerror}).",
            "pass a file path in a folder you can write to.",
        ) from None
    os.close(fd)
    Path(probe).unlink(missing_ok=True)


COMPANIONS = ("", "-wal", "-shm", "-journal")  # SQLite's files beside a database


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same absolute and resolved path, or (both
    existing) the same device and inode, which a symlink, a hard link or ``..`` cannot hide."""
    try:
        if Path(os.path.abspath(a)) == Path(os.path.abspath(b)) or a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except (OSError, RuntimeError):  # a symlink loop names no file, so not the store
        return False


def _names(store: Path) -> list[Path]:
    """The store's path as given and as resolved: SQLite names its -wal and -shm files after
    the file a symlink leads to."""
    try:
        return [store.expanduser(), store.expanduser().resolve()]
    except (OSError, RuntimeError):
        return [store.expanduser()]


def check_not_the_store(path: Path, flag: str, db: Path | str | None = None) -> None:
    """UserError (one line) when ``path`` is the results database or one of its SQLite
    companions: a report written there replaces every stored run ("wrote o.db"). Both the
    ``--db`` given and the default store (GPUSCOUT_DB, the user data dir) are guarded."""
    from gpuscout.store import default_target
    from gpuscout.store.engines import is_url

    target = path.expanduser()
    for store in dict.fromkeys(str(s) for s in (db, default_target()) if s is not None):
        if is_url(store):
            continue
        for extra in COMPANIONS:
            if any(same_file(target, Path(f"{base}{extra}")) for base in _names(Path(store))):
                what = "the results database" + (f"'s {extra[1:]} file" if extra else "")
                raise UserError(
                    f"{flag} '{path}' is {what} ('{store}'); writing there would destroy "
                    "every stored run.",
                    f"pass another file to {flag}.",
                )


def check_output_files(pairs: list[tuple[Path | None, str]], db: Path | str | None = None) -> None:
    """:func:`check_output_file` for each ``(path, flag)`` given; ``None`` paths are skipped,
    a path that is the results database (``db``, else the default store) is refused, and two
    flags naming the same file are refused (the second would overwrite the first)."""
    seen: dict[Path, str] = {}
    for path, flag in pairs:
        if path is None:
            continue
        check_not_the_store(path, flag, db)
        check_output_file(path, flag)
        key = Path(os.path.abspath(path.expanduser()))
        if key in seen:
            raise UserError(
                f"{seen[key]} and {flag} both name '{path}'; one report would overwrite the other.",
                "pass a different file to each.",
            )
        seen[key] = flag
