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

from gpuscout.errors import UserError


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


def check_output_files(pairs: list[tuple[Path | None, str]]) -> None:
    """:func:`check_output_file` for each ``(path, flag)`` given; ``None`` paths are skipped,
    and two flags naming the same file are refused (the second would overwrite the first)."""
    seen: dict[Path, str] = {}
    for path, flag in pairs:
        if path is None:
            continue
        check_output_file(path, flag)
        key = Path(os.path.abspath(path.expanduser()))
        if key in seen:
            raise UserError(
                f"{seen[key]} and {flag} both name '{path}'; one report would overwrite the other.",
                "pass a different file to each.",
            )
        seen[key] = flag
