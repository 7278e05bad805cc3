"""``printable``: the one function every renderer shows stored text through."""

from __future__ import annotations

import pytest

from gpuscout.core.text import is_printable, printable, printable_lines


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("CPU:0\r\nInjected-Header: x", r"CPU:0\r\nInjected-Header: x"),
        ("a\x00b\x1b[31mc\x07", r"a\x00b\x1b[31mc\x07"),
        ("tab\there", r"tab\there"),
        ("del\x7f c1\x9b", r"del\x7f c1\x9b"),
        ("gpu\u202e0:\u2066x\u2069\u200f", r"gpu\u202e0:\u2066x\u2069\u200f"),
        ("line\u2028sep", r"line\u2028sep"),
    ],
)
def test_controls_become_visible_escapes(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert is_printable(printable(raw))


def test_ordinary_text_is_unchanged() -> None:
    text = "NVIDIA GeForce RTX 4090 · é 中文 🚀 [bold] <b> \\x1b (typed)"
    assert printable(text) == text and is_printable(text)


def test_lines_keep_their_line_feeds_only() -> None:
    assert printable_lines("a\nb\r\x1b") == "a\nb\\r\\x1b"
    assert printable(None) == "None"
