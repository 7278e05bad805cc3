"""The ``gpuscout`` command. The only place that touches argv, stdout and exit codes.

Imports here stay light (argparse, no TensorFlow, no rich until a command runs), so
``gpuscout --help`` and every command that does not measure start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Sequence

from gpuscout.cli import advise as advise_cmd
from gpuscout.cli import audit as audit_cmd
from gpuscout.cli import bench as bench_cmd
from gpuscout.cli import calibrate as calibrate_cmd
from gpuscout.cli import cloud as cloud_cmd
from gpuscout.cli import cost as cost_cmd
from gpuscout.cli import doctor as doctor_cmd
from gpuscout.cli import launch as launch_cmd
from gpuscout.cli import predict as predict_cmd
from gpuscout.cli import report as report_cmd
from gpuscout.cli import runs as runs_cmd
from gpuscout.cli import scout as scout_cmd
from gpuscout.cli import soak as soak_cmd
from gpuscout.cli import specs as specs_cmd
from gpuscout.cli.parser import OneLineParser
from gpuscout.core import interrupts
from gpuscout.core.errors import GpuscoutError, UserError, caused_by_interrupt


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpuscout",
        description="Which GPU to train on, from measurement and physics.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    scout_cmd.register(sub)
    bench_cmd.register(sub)
    launch_cmd.register(sub)
    runs_cmd.register(sub)
    cloud_cmd.register(sub)
    doctor_cmd.register(sub)
    soak_cmd.register(sub)
    specs_cmd.register(sub)
    audit_cmd.register(sub)
    predict_cmd.register(sub)
    calibrate_cmd.register(sub)
    cost_cmd.register(sub)
    advise_cmd.register(sub)
    report_cmd.register(sub)
    return parser


# Commands that measure: an explicit SIGINT stops them even where it was inherited ignored.
MEASURING = frozenset({"bench", "scout", "soak", "doctor", "launch"})


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; SIGTERM and SIGHUP end any of them as Ctrl-C does, exit code 130.

    The handlers go in first, before anything that takes time, so that a signal ends every
    command the same way at any moment (before, a kill in the first second ended the process
    with 143 and no message, a later one stored an interrupted run); the previous handlers
    are put back on return, for a caller that runs commands in its own process.
    """
    interrupts.forget()
    restore = interrupts.stop_on_signals(take_sigint=False)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("gpuscout: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        # A signal that a library turned into another failure (a half-imported module's,
        # later) is still the interrupt the user sent, not a bug to show a traceback for.
        if not (caused_by_interrupt(exc) or interrupts.received):
            raise
        print("gpuscout: interrupted", file=sys.stderr)
        return 130
    finally:
        restore()
        interrupts.forget()  # acted on: the next command in this process starts clean


def _main(argv: Sequence[str] | None) -> int:
    from gpuscout.measure.lifeline import from_environment

    from_environment()  # a worker of 'gpuscout launch' dies with its launcher
    if sys.stdout is None:  # started with stdout closed (``gpuscout specs >&-``): as ls does
        print(
            "gpuscout: error: standard output is closed: nothing could be shown. To fix: "
            "leave it open, or send it to /dev/null.",
            file=sys.stderr or sys.__stderr__,
        )
        return 2
    _show_what_cannot_be_encoded()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from importlib.metadata import version

        print(f"gpuscout {version('gpuscout')}")
        return 0
    if not args.command:
        parser.print_help()
        return 0
    if args.command in MEASURING:
        # Ctrl-C, a closed terminal or a kill end a measurement and keep what it measured;
        # SIGINT is taken even where it was inherited ignored (a background job).
        interrupts.stop_on_signals()
    try:
        code = int(args.handler(args))
        sys.stdout.flush()  # a reader that left shows here, not as a failed flush at exit
        return code
    except BrokenPipeError:
        return _reader_left()
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        return _output_lost(exc)
    except UserError as exc:  # its text may quote a stored name or a path: shown escaped
        from gpuscout.core.text import printable

        print(f"gpuscout: error: {printable(exc.one_line())}", file=sys.stderr)
        return exc.exit_code
    except GpuscoutError as exc:
        from gpuscout.core.text import printable

        print(f"gpuscout: error: {printable(exc)}", file=sys.stderr)
        return 1


def _show_what_cannot_be_encoded() -> None:
    """A character the terminal's encoding lacks is shown as an escape (``\\u2603``), not a
    traceback: a stored note or device name may hold any character, and a terminal, a pipe
    under ``PYTHONIOENCODING=ascii`` or a Latin-1 console cannot encode every one (issue 43:
    ``runs list`` ended in a UnicodeEncodeError). The streams keep their encoding."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


# A write that failed because where it goes is full or broken (``gpuscout specs > /dev/full``).
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _output_lost(exc: OSError) -> int:
    """What a command wrote could not all be written (a full disk, a quota, a device error):
    one line on stderr, exit 1, and stdout pointed at /dev/null so that Python's flush at exit
    does not fail again with a traceback-like 'Exception ignored'. Nothing stored is touched:
    the store writes its own files, each whole or not at all."""
    where = getattr(exc, "filename", None) or "standard output"
    print(
        f"gpuscout: error: could not write {where}: {exc.strerror or exc}; part of the output "
        "is missing. To fix: free space (or write it elsewhere) and run the command again.",
        file=sys.stderr,
    )
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 1


def _reader_left() -> int:
    """The reader of stdout closed it early (``gpuscout specs --json | head -1``): stop quietly.

    stdout is pointed at /dev/null so that Python's own flush at exit does not fail again, and
    the exit code is 141 (128 + SIGPIPE), what the shell reports for any Unix tool that a
    closed pipe stopped (``yes | head -1``): 0 would claim the whole output was delivered, and
    a script under ``set -o pipefail`` sees gpuscout end like the tools it is piped with.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (embedded, captured)
        pass
    return 141  # 128 + SIGPIPE (13)


def entry() -> None:
    sys.exit(main())
