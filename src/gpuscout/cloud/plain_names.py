"""Names read from files made elsewhere: plain names, never paths or options.

A task file is edited, copied, shared; its name becomes a cluster's name and an ``rsync``
source, and its export name a file under ``DIR/results``. Like pip and SkyPilot, which never
take a name from a downloaded file as a path, ``cloud run`` accepts only a plain name: a
letter or digit first (so never ``-e``, an option, nor ``..``), then letters, digits, ``.``,
``_`` and ``-`` (so never ``/``), at most 100 characters.
"""

from __future__ import annotations

import re

from gpuscout.core.errors import UserError

PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def is_plain(name: str) -> bool:
    """Whether ``name`` is a plain name (see the module's docstring)."""
    return PLAIN.fullmatch(name) is not None


def plain_name(
    name: str,
    what: str,
    where: str,
    suffix: str = "",
    fix: str = "write the folder again with 'gpuscout cloud plan'.",
) -> str:
    """``name`` if it is a plain name ending in ``suffix``; else a UserError naming ``what``
    (e.g. "its export name") in ``where`` (the file) and the value."""
    if is_plain(name) and name.endswith(suffix):
        return name
    shape = "letters, digits, '.', '_' and '-', a letter or digit first" + (
        f", ending in '{suffix}'" if suffix else ""
    )
    raise UserError(
        f"{where}: {what} {ascii(name)[:80]} is not a plain name ({shape}).",
        fix,
    )


__all__ = ["PLAIN", "is_plain", "plain_name"]
