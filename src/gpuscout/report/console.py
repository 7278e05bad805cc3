"""The stdout console every command prints through (rich), and nothing heavier to import."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from gpuscout.core.text import printable_lines


class _StdoutConsole(Console):
    def on_broken_pipe(self) -> None:
        """A reader that left (``| head``) ends every command the same way: the CLI's entry
        takes the error (rich would exit 1 on its own)."""
        raise BrokenPipeError

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        """The last line of defence: no control character of a printed value reaches the
        terminal, whichever renderer forgot :func:`gpuscout.core.text.printable`. Only text
        segments are neutralised; rich's own control segments (cursor moves) and the styles
        it renders as escape sequences pass, and line feeds are the layout's."""
        safe = (
            seg if seg.control else Segment(printable_lines(seg.text), seg.style, seg.control)
            for seg in buffer
        )
        return super()._render_buffer(safe)


def stdout_console() -> Console:
    """A console for stdout; wide enough for the tables when the output is piped to a file."""
    return _StdoutConsole(width=None if sys.stdout.isatty() else 160)


def literal(value: object) -> str:
    """A stored value to put inside rich markup: control characters as escapes
    (:func:`gpuscout.core.text.printable`) and ``[`` escaped, so a device named ``[bold red]x``
    prints as those characters."""
    from rich.markup import escape

    from gpuscout.core.text import printable

    return escape(printable(value))
