"""Run a measurement in a child process, so that a crash becomes a stored failure.

A segfault in a kernel, the kernel's out-of-memory killer or a wedged driver would otherwise
take the whole command down and lose the run. The parent never imports TensorFlow: it starts
``gpuscout.measure.child``, relays its progress, and turns whatever happens into a result.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from gpuscout.errors import GpuscoutError, UserError
from gpuscout.measure.benchmark import check, failed
from gpuscout.measure.protocol import Progress, StopRule
from gpuscout.records import BenchConfig, RunResult

# No word from the child for this long means it hung: a first XLA compile can take minutes,
# a wedged device or driver never answers.
STALL_S = 900.0


def run_isolated(
    config: BenchConfig,
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    stall_s: float = STALL_S,
) -> RunResult:
    """Like :func:`gpuscout.measure.bench`, but in a child process.

    A child that says nothing for ``stall_s`` seconds is killed and the run stored as hung.
    """
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
        for message in _messages(read_fd, stall_s):
            if "progress" in message and on_progress:
                p = message["progress"]
                on_progress(Progress(**{**p, "rule": StopRule(**p["rule"])}))
            elif "phase" in message and on_phase:
                on_phase(message["phase"])
            else:
                final = message
        code = proc.wait()
    except _Stalled:
        proc.kill()
        proc.wait()
        return failed(
            config,
            "error",
            f"the measurement hung: no progress for {stall_s:g} s (a wedged device or driver, "
            "or a step slower than that); the measuring process was killed",
        )
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


class _Stalled(Exception):
    pass


def _messages(fd: int, stall_s: float) -> Iterator[dict[str, Any]]:
    """JSON lines from the child until it closes the pipe; _Stalled after stall_s of silence."""
    buffer = b""
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], stall_s)
            if not ready:
                raise _Stalled
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                yield json.loads(line)
    finally:
        os.close(fd)


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
