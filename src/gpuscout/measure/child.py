"""The measuring child process: ``python -m gpuscout.measure.child FD [PARENT_PID]``.

Reads ``{"job": ..., "payload": ...}`` as JSON on stdin, runs the job in this process, and
writes JSON lines to file descriptor FD: ``{"phase": ...}``, ``{"progress": ...}``, then one of
``{"result": ...}`` (bench), ``{"report": ...}`` (doctor, soak) or
``{"user_error": ..., "fix": ...}``. Its stdout is the parent's stderr,
so anything the user's model prints cannot corrupt the parent's ``--json`` output.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from gpuscout.errors import GpuscoutError, UserError
from gpuscout.measure.benchmark import bench
from gpuscout.measure.lifeline import die_with_parent
from gpuscout.measure.protocol import Progress
from gpuscout.records import BenchConfig


def main(argv: list[str]) -> int:
    # The parent forwards Ctrl-C as SIGINT on purpose: take it even where this process was
    # started with SIGINT ignored (a background job of a non-interactive shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Never outlive the gpuscout process that started this one (a worker blocked in a
    # collective would otherwise wait for ever): see gpuscout.measure.lifeline.
    die_with_parent(int(argv[1]) if len(argv) > 1 else os.getppid())
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
            result = bench(config, on_progress=on_progress, on_phase=on_phase, monitor=False)
            emit({"result": result.to_json_dict(), "step_times_s": result.step_times_s})
        else:
            from gpuscout.measure.backends.tensorflow.runtime import import_tensorflow

            import_tensorflow()  # before the job's modules import Keras: its chatter is hidden
            emit({"report": JOBS[job](payload, emit)})
    except UserError as exc:
        emit({"user_error": exc.problem, "fix": exc.fix})
        return 2
    except GpuscoutError as exc:
        emit({"error": str(exc)})
        return 1
    except Exception as exc:  # a bug or a device failure: the parent says what, not only "died"
        traceback.print_exc()
        emit({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


def _doctor(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    from gpuscout.measure.backends.tensorflow.doctor_run import diagnose_here

    return diagnose_here(payload, emit)


def _soak(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    from gpuscout.measure.backends.tensorflow.soak import run_soak

    return run_soak(payload, emit)


JOBS: dict[str, Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], dict[str, Any]]] = {
    "doctor": _doctor,
    "soak": _soak,
}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
