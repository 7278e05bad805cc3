"""The stdout console every command prints through (rich), and nothing heavier to import."""

from __future__ import annotations

import sys

from rich.console import Console


def stdout_console() -> Console:
    """A console for stdout; wide enough for the tables when the output is piped to a file."""
    return Console(width=None if sys.stdout.isatty() else 160)
