"""Your ``--model`` and ``--data`` files, sent to every node with the folders they sit in.

A model file often imports a module beside it (``from layers import Block``); sending the
file alone fails on the node, after start-up and install were billed. Finding what a file
imports would take running it, so the plan sends the file's whole folder: it is mounted at
``/tmp/gpuscout-inputs/<model|data>/`` on each node, the command points at the file there, and
that folder is put on ``PYTHONPATH`` so the file's neighbours import as they do when bench runs
in that folder here. A folder too large to be a model's (a project with its .venv or .git, a
dataset, a home directory) is not copied to every node: the file goes alone, as it did before
folders were sent, and the plan says why its neighbours do not travel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gpuscout.core.errors import UserError

REMOTE_INPUTS = "/tmp/gpuscout-inputs"  # your model and data folders, mounted by SkyPilot
MAX_FILES = 1000  # more than any model's folder: likely a dataset or a home directory
MAX_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class Shipped:
    """A local folder sent to every node for a bench option's file."""

    flags: tuple[str, ...]  # the bench options whose files are in it: ("--model",)
    local: Path  # the folder, resolved
    remote: str  # where it is mounted on each node
    files: int
    size: int  # bytes
    alone: bool = False  # the file alone: its folder is larger than a model's (a .venv, data)

    def line(self) -> str:
        """What the plan says it sends, in one line."""
        if self.alone:
            return (
                f"ships {self.local} alone ({self.size / 1e6:.1f} MB) to {self.remote} on each "
                f"node for bench {' and '.join(self.flags)}: its folder holds more than "
                f"{MAX_FILES:,} files or {MAX_BYTES // 2**20} MB (a .venv, a .git, data?), so "
                "the modules beside it are not sent; put the file and the modules it imports "
                "in a folder of their own to send them too"
            )
        return (
            f"ships {self.local} ({self.files} file(s), {self.size / 1e6:.1f} MB) to "
            f"{self.remote} on each node for bench {' and '.join(self.flags)}: the file and "
            "the modules beside it it may import (on PYTHONPATH there)"
        )


def folder_size(folder: Path, flag: str, value: str) -> tuple[int, int]:
    """(files, bytes) of ``folder``, links not followed; UserError as soon as it exceeds
    what a model's folder holds."""
    files = size = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # gone meanwhile, or unreadable: SkyPilot says so if it matters
            files, size = files + 1, size + info.st_size
            if files > MAX_FILES or size > MAX_BYTES:
                raise UserError(
                    f"bench {flag} {value}: its folder {folder} holds more than {MAX_FILES:,} "
                    f"files or {MAX_BYTES // 2**20} MB; the plan sends the file's whole folder "
                    "to each node (so the modules it imports travel with it).",
                    "put the file and the modules it imports in a folder of their own.",
                )
    return files, size


def ship(flag: str, value: str, shipped: list[Shipped]) -> str:
    """The value bench gets on the node for ``flag value`` (``FILE.py:FUNCTION``), its folder
    added to ``shipped`` (once, if another option's file sits in the same folder)."""
    file, sep, function = value.rpartition(":") if ".py:" in value else (value, "", "")
    local = Path(file).expanduser()
    if not local.is_file():
        raise UserError(f"bench {flag} {value}: no file '{file}' here to send to the nodes.",
                        f"give {flag} a file that exists.")  # fmt: skip
    real = local.resolve()  # a link's target, with the folder it sits in
    for i, s in enumerate(shipped):
        if s.local == real.parent:
            shipped[i] = Shipped((*s.flags, flag), s.local, s.remote, s.files, s.size)
            return f"{s.remote}/{real.name}{sep}{function}"
    remote = f"{REMOTE_INPUTS}/{flag.lstrip('-')}"
    try:
        files, size = folder_size(real.parent, flag, value)
    except UserError:  # a project folder (.venv, .git, data): the file alone, said so
        alone = f"{remote}/{real.name}"
        shipped.append(Shipped((flag,), real, alone, 1, real.stat().st_size, alone=True))
        return f"{alone}{sep}{function}"
    shipped.append(Shipped((flag,), real.parent, remote, files, size))
    return f"{remote}/{real.name}{sep}{function}"


__all__ = ["MAX_BYTES", "MAX_FILES", "REMOTE_INPUTS", "Shipped", "folder_size", "ship"]
