"""``gpuscout ARGS`` in this process for commands that start a measuring child.

:func:`tests.conftest.run_in_process` replaces stderr by a string buffer, but the runner hands
the measuring child the command's own stderr *file* (``sys.stderr.fileno()``), as a terminal or
a log would be: here stderr is a real temporary file instead, read back when the command ends.
The command's parse, checks, storing and rendering then cost no fresh interpreter (and no
second TensorFlow start where the command itself traces a step), while the measuring child
stays a real process: what a test of the measurement checks.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile

from tests.conftest import CliResult


def run_measuring_in_process(*args: str) -> CliResult:
    """Run ``gpuscout ARGS`` through :func:`gpuscout.cli.main` here; stdin is empty, stderr
    (the command's and its measuring child's) is a real file, returned as text."""
    from gpuscout.cli import main

    out = io.StringIO()
    saved_stdin = sys.stdin
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        try:
            sys.stdin = io.StringIO("")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(list(args))
                except SystemExit as exit_:  # argparse's own exits
                    code = exit_.code if isinstance(exit_.code, int) else 1
                err.flush()
        finally:
            sys.stdin = saved_stdin
        err.seek(0)
        return CliResult(code, out.getvalue(), err.read())
