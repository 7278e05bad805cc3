"""The measuring child process: ``python -m gpuscout.measure.child FD [PARENT_PID]``.

Reads ``{"job": ..., "payload": ...}`` as JSON on stdin, runs the job in this process, and
writes JSON lines to file descriptor FD: ``{"phase": ...}``, ``{"progress": ...}``, then one of
``{"result": ...}`` (bench), ``{"report": ...}`` (doctor, soak, trace) or
``{"user_error": ..., "fix": ...}``. Its stdout is the parent's stderr,
so anything the user's model prints cannot corrupt the parent's ``--json`` output.
"""

from __future__ import annotations

import signal
import sys

INTERRUPTED_CODE = 130  # 128 + SIGINT: stopped before it could report anything


_signalled: list[int] = []  # the interrupts this process was sent


def _quit(signum: int, _frame: object) -> None:
    _signalled.append(signum)
    raise SystemExit(INTERRUPTED_CODE)  # quietly: the parent reports the run as interrupted


def _quiet_interrupts(kind: type[BaseException], exc: BaseException, tb: object) -> None:
    """No traceback for a failure an interrupt caused while this module imported: the parent
    reports that run as interrupted. The signal's SystemExit may be wrapped in another exception
    (see gpuscout.core.errors.caused_by_interrupt) or lost altogether (NumPy's C import turned one
    into "ImportError: PyCapsule_Import could not import module datetime", with no cause: found
    by the suite), so an interrupt received counts too. Any other failure prints as usual.
    Defined before the imports it guards, and needing none of them."""
    if _signalled or isinstance(exc, KeyboardInterrupt):
        return
    try:
        from gpuscout.core.errors import caused_by_interrupt

        quiet = caused_by_interrupt(exc)
    except BaseException:  # an import that fails here too: print the original
        quiet = False
    if not quiet:
        sys.__excepthook__(kind, exc, tb)  # type: ignore[arg-type]


def _interrupt(_signum: int, _frame: object) -> None:
    """Ctrl-C as KeyboardInterrupt, after pointing this process's stderr at /dev/null: the
    interrupt can land inside TensorFlow's C++ while it calls back into Python, which then
    prints its own traceback ("SystemError: <built-in function __import__> returned a result
    with an exception set"); the parent reports the interruption, and what the job measured
    still comes back on the channel (found by CI, about 1 run in 5 of the kill -INT test)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass
    raise KeyboardInterrupt


# First of all, before the imports below (seconds): the parent forwards Ctrl-C and SIGTERM as
# SIGINT, and starts this process with SIGINT blocked, so that one sent while the interpreter
# starts waits for this line. Until main() takes it as KeyboardInterrupt, it ends the process
# quietly. (Issue 17: the handler was set after the imports, and a SIGINT in those seconds, to a
# child that inherited it ignored, was lost: the run measured on.) A child that misses it
# anyway is sent it again by the parent, and killed INTERRUPT_GRACE_S later.
# Only when run as the child: a process that imports this module keeps its own handlers.
if __name__ == "__main__":
    signal.signal(signal.SIGINT, _quit)
    sys.excepthook = _quiet_interrupts
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from gpuscout.core.errors import GpuscoutError, UserError, caused_by_interrupt  # noqa: E402
from gpuscout.core.records import BenchConfig  # noqa: E402
from gpuscout.measure.group_guard import start_guard  # noqa: E402
from gpuscout.measure.lifeline import die_with_parent  # noqa: E402
from gpuscout.measure.protocol import Progress  # noqa: E402


def main(argv: list[str]) -> int:
    # From here a SIGINT is an interrupt the job handles: a measurement stores what it has.
    signal.signal(signal.SIGINT, _interrupt)
    # Never outlive the gpuscout process that started this one (a worker blocked in a
    # collective would otherwise wait for ever): see gpuscout.measure.lifeline.
    die_with_parent(int(argv[1]) if len(argv) > 1 else os.getppid())
    # The kernel's death signal does not reach what the user's code forks: a guard in this
    # process's group kills the group once this process is gone, however it went (issue 31).
    # Started before any framework is imported; see gpuscout.measure.group_guard.
    start_guard(close_fds=(int(argv[0]),))
    channel = os.fdopen(int(argv[0]), "w", buffering=1)

    def emit(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    def on_progress(p: Progress) -> None:
        emit({"progress": dataclasses.asdict(p)})

    def on_phase(text: str) -> None:
        emit({"phase": text})

    request = json.loads(sys.stdin.read())
    job, payload = request["job"], request["payload"]
    try:
        if job == "bench":
            config = BenchConfig.model_validate(payload)
            # The one place a backend is chosen: Keras reads it once, when first imported,
            # and nothing in this process has imported Keras yet.
            os.environ["KERAS_BACKEND"] = config.backend
            from gpuscout.scale.distribute import host_devices, with_host_devices

            if n := host_devices(config):  # the CPU split into devices before JAX starts
                os.environ["XLA_FLAGS"] = with_host_devices(os.environ.get("XLA_FLAGS", ""), n)
            from gpuscout.measure.benchmark import bench

            result = bench(config, on_progress=on_progress, on_phase=on_phase, monitor=False)
            emit({"result": result.to_json_dict(), "step_times_s": result.step_times_s})
        else:
            backend = payload.get("backend", "tensorflow")
            os.environ["KERAS_BACKEND"] = backend  # as above: before anything imports Keras
            from gpuscout.measure.backends import get

            get(backend).start_process()  # before the job's modules import Keras
            emit({"report": JOBS[job](payload, emit)})
    except UserError as exc:
        emit({"user_error": exc.problem, "fix": exc.fix})
        return 2
    except GpuscoutError as exc:
        emit({"error": str(exc)})
        return 1
    except Exception as exc:  # a bug or a device failure: the parent says what, not only "died"
        if caused_by_interrupt(exc):  # an interrupt an import wrapped: not a bug
            return INTERRUPTED_CODE
        traceback.print_exc()
        emit({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


def _doctor(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    from gpuscout.measure.backends import get

    return get(payload.get("backend", "tensorflow")).doctor(payload, emit)


def _soak(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    from gpuscout.measure.backends import get

    return get(payload.get("backend", "tensorflow")).soak(payload, emit)


def _trace(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    from gpuscout.measure.trace_child import trace_here

    return trace_here(payload, emit)


JOBS: dict[str, Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], dict[str, Any]]] = {
    "doctor": _doctor,
    "soak": _soak,
    "trace": _trace,  # a user's model traced for predict and the commands built on it
}


def _main_quietly(argv: list[str]) -> int:
    """``main``, ended by an interrupt that came before the job could catch it (while it
    imports, say): the parent reports that run as interrupted, so no traceback is printed."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        return INTERRUPTED_CODE


if __name__ == "__main__":
    sys.exit(_main_quietly(sys.argv[1:]))
