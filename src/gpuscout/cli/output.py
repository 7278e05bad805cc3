"""Every ``--json`` output of the CLI goes through :func:`print_json`: strict JSON, always.

Python's ``json`` writes ``Infinity`` and ``NaN`` for non-finite floats, which no strict JSON
parser (``jq``, JavaScript's ``JSON.parse``, Go, Rust) reads: one such value makes the whole
output unreadable to the script that asked for JSON. The options' ranges (``cli/parser.py``)
keep what the user types finite, but a derived value can still overflow or be undefined (a
ratio to zero, an interval of one sample), so a non-finite number is written as ``null``:
"no value", which a reader must handle anyway, rather than a token that breaks it.

JSON is safe on a terminal by its own rules (``json.dumps`` escapes every control character,
and with ``ensure_ascii`` every non-ASCII one). CSV has no escapes of its own, so CSV text goes
through :func:`write_text`: byte-exact data to a file or a pipe, but on a terminal every control
character of a cell made visible (``text.printable_lines``), so stored text cannot set the
terminal's title or clear its screen.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any


def finite_or_none(data: Any) -> Any:
    """``data`` with every non-finite float (inf, -inf, nan), at any depth, made ``None``."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_or_none(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [finite_or_none(value) for value in data]
    return data


def dumps_strict(
    data: Any, *, indent: int | None = 2, default: Callable[[Any], Any] | None = None
) -> str:
    """``data`` as strict JSON text: non-finite numbers as ``null``, never ``Infinity``."""

    def converted(value: Any) -> Any:  # what ``default`` makes of an object is checked too
        return finite_or_none(default(value)) if default else value

    return json.dumps(
        finite_or_none(data),
        indent=indent,
        default=converted if default else None,
        allow_nan=False,  # a value that slipped through is an error, not invalid output
    )


def write_text(text: str) -> None:
    """Write data text (CSV) to stdout: as is to a file or a pipe, where a program reads it
    byte for byte; escaped (line feeds kept) when stdout is a terminal, where a person reads
    it and an ESC in a cell would be obeyed, not shown."""
    if sys.stdout.isatty():
        from gpuscout.core.text import printable_lines

        text = printable_lines(text)
    sys.stdout.write(text)


def print_json(
    data: Any, *, indent: int | None = 2, default: Callable[[Any], Any] | None = None
) -> None:
    """Write ``data`` to stdout as strict JSON and a newline."""
    sys.stdout.write(dumps_strict(data, indent=indent, default=default))
    sys.stdout.write("\n")
