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
