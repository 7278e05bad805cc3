"""The measuring child process: ``python -m gpuscout.measure.child FD``.

Reads a :class:`~gpuscout.records.BenchConfig` as JSON on stdin, measures in this process, and
writes JSON lines to file descriptor FD: ``{"phase": ...}``, ``{"progress": ...}``, then one of
``{"result": ...}`` or ``{"user_error": ..., "fix": ...}``. Its stdout is the parent's stderr,
so anything the user's model prints cannot corrupt the parent's ``--json`` output.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from gpuscout.errors import GpuscoutError, UserError
from gpuscout.measure.benchmark import bench
from gpuscout.measure.protocol import Progress
from gpuscout.records import BenchConfig


def main(argv: list[str]) -> int:
    channel = os.fdopen(int(argv[0]), "w", buffering=1)

    def emit(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    def on_progress(p: Progress) -> None:
        emit({"progress": dataclasses.asdict(p)})

    def on_phase(text: str) -> None:
        emit({"phase": text})

    config = BenchConfig.model_validate_json(sys.stdin.read())
    try:
        result = bench(config, on_progress=on_progress, on_phase=on_phase)
    except UserError as exc:
        emit({"user_error": exc.problem, "fix": exc.fix})
        return 2
    except GpuscoutError as exc:
        emit({"error": str(exc)})
        return 1
    emit({"result": result.to_json_dict(), "step_times_s": result.step_times_s})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
