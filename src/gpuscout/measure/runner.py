"""Run a measurement in a child process, so that a crash becomes a stored failure.

A segfault in a kernel, the kernel's out-of-memory killer or a wedged driver would otherwise
take the whole command down and lose the run. The parent never imports TensorFlow: it starts
``gpuscout.measure.child``, relays its progress, and turns whatever happens into a result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from gpuscout.errors import GpuscoutError, UserError
from gpuscout.measure.bench import check, failed
from gpuscout.measure.protocol import Progress, StopRule
from gpuscout.records import BenchConfig, RunResult


def run_isolated(
    config: BenchConfig,
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> RunResult:
    """Like :func:`gpuscout.measure.bench`, but in a child process."""
    check(config)  # bad input fails here, before a child (and TensorFlow) starts
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuscout.measure.child", str(write_fd)],
        stdin=subprocess.PIPE,
        stdout=sys.stderr.fileno(),
        pass_fds=(write_fd,),
        text=True,
    )
    os.close(write_fd)
    assert proc.stdin is not None
    proc.stdin.write(config.model_dump_json())
    proc.stdin.close()
    final: dict[str, Any] = {}
    try:
        with os.fdopen(read_fd) as channel:
            for line in channel:
                message = json.loads(line)
                if "progress" in message and on_progress:
                    p = message["progress"]
                    on_progress(Progress(**{**p, "rule": StopRule(**p["rule"])}))
                elif "phase" in message and on_phase:
                    on_phase(message["phase"])
                else:
                    final = message
        code = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return failed(
            config, "error", "interrupted (Ctrl-C or a termination signal) before the end"
        )
    if "result" in final:
        result = RunResult.model_validate(final["result"])
        return result.model_copy(update={"step_times_s": final["step_times_s"]})
    if "user_error" in final:
        raise UserError(final["user_error"], final.get("fix"))
    if "error" in final:
        raise GpuscoutError(final["error"])
    return failed(config, "error", _death(code))


def _death(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = (
            " (often the kernel's out-of-memory killer: try a smaller --batch-size)"
            if -code == signal.SIGKILL
            else ""
        )
        return f"the measuring process was killed by {name}{hint}"
    return f"the measuring process exited with code {code} without a result"
