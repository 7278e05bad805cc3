"""The stdout console every command prints through (rich), and nothing heavier to import."""

from __future__ import annotations

import sys

from rich.console import Console


class _StdoutConsole(Console):
    def on_broken_pipe(self) -> None:
        """A reader that left (``| head``) ends every command the same way: the CLI's entry
        takes the error (rich would exit 1 on its own)."""
        raise BrokenPipeError


def stdout_console() -> Console:
    """A console for stdout; wide enough for the tables when the output is piped to a file."""
    return _StdoutConsole(width=None if sys.stdout.isatty() else 160)
