"""Stored text made safe to show: control characters become visible escapes.

Device names, workload names, notes, messages and environment values come from users and from
imported files, so they may hold anything. Shown raw, an ESC starts a terminal escape sequence,
a CR/LF forges a line of ``runs list``, a NUL ends a string early in some viewers and a
right-to-left override makes ``gpu:0`` read as something else. Every renderer (the terminal,
the HTML and the Markdown report) passes such text through :func:`printable` so the reader sees
what is stored, character for character, and nothing it could be made to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

# C0 controls, DEL, C1 controls; the bidirectional embeddings, overrides, isolates and marks;
# the Unicode line and paragraph separators (they break lines like LF in some viewers).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE_KEEP_LINES = re.compile(_UNSAFE.pattern.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f"))


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any) -> str:
    """``text`` (``str()`` of it) with every control, bidi-override or line-separator character
    replaced by a visible escape such as ``\\x1b``, ``\\r``, ``\\n`` or ``\\u202e``: one line,
    shown literally, for any value that came from a user or a file."""
    return _UNSAFE.sub(_escape, str(text))


def printable_lines(text: Any) -> str:
    """As :func:`printable`, but line feeds stay: for output whose layout is already built
    (a rendered table), where the LF is the renderer's own line break."""
    return _UNSAFE_KEEP_LINES.sub(_escape, str(text))


def is_printable(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`printable` would escape."""
    return _UNSAFE.search(text) is None


# What a spreadsheet evaluates when a cell starts with it (OWASP, "CSV Injection"): a formula
# (=, +, -, @), and a tab or carriage return in front of one; the full-width forms too, which
# some spreadsheets fold to ASCII.
_FORMULA_START = tuple("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell that a spreadsheet shows rather than evaluates.

    Why: ``runs export --format csv`` and ``specs --csv`` write notes, messages and names that
    came from users and imported files; opened in a spreadsheet, a cell such as
    ``=HYPERLINK("http://…"&A1,"click")`` is a live formula that can send the sheet's data away.
    A text cell that starts as a formula does is prefixed with ``'`` (OWASP's advice: the
    spreadsheet then shows it as text). Numbers, including negative ones, pass unchanged, so the
    file still reads back as data."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return "'" + value


def from_spreadsheet_safe(value: str) -> str:
    """The inverse of :func:`spreadsheet_safe` for a cell read back: a ``'`` in front of what
    starts as a formula is taken off, so ``specs --csv`` read as a ``--catalog`` file gives
    the row it came from (a note "-5% clocks" stays "-5% clocks"). A cell that starts with
    ``'`` for any other reason is kept as it is."""
    if value.startswith("'") and value[1:].startswith(_FORMULA_START):
        return value[1:]
    return value


def csv_text(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    """A CSV file's text, header first, every cell through :func:`spreadsheet_safe`: the one
    writer of every CSV gpuscout produces.

    Lines end in LF, but a cell holding a CR or an LF is quoted either way: the csv module
    quotes only the characters of its own line terminator, so each row is written with CRLF
    and its terminator replaced (a lone CR in a note otherwise splits the row in two)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    lines = []
    cells = ([spreadsheet_safe(row.get(c)) for c in columns] for row in rows)
    for values in [list(columns), *cells]:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        lines.append(buffer.getvalue()[:-2] + "\n")
    return "".join(lines)
