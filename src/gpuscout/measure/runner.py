"""Run a measurement in a child process, so that a crash becomes a stored failure.

A segfault in a kernel, the kernel's out-of-memory killer or a wedged driver would otherwise
take the whole command down and lose the run. The parent never imports TensorFlow: it starts
``gpuscout.measure.child``, relays its progress, and turns whatever happens into a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gpuscout.core import interrupts
from gpuscout.core.errors import GpuscoutError, UserError
from gpuscout.core.records import BenchConfig, MonitorSummary, RunResult
from gpuscout.measure.benchmark import INTERRUPTED, NOT_RECORDED, NOT_RESOLVED, check, failed
from gpuscout.measure.monitor import Monitor, attach, start_monitor
from gpuscout.measure.process_group import EXIT_GRACE_S, end_group, has_exited, kill_group
from gpuscout.measure.protocol import BUILDING, Progress, StopRule
from gpuscout.scale import distribute

# No word from the child for this long means it hung: a first XLA compile can take minutes,
# a wedged device or driver never answers.
STALL_S = 900.0
# How long an interrupted child gets to report what it measured, in all (its progress
# messages do not extend it); and after how long a child still at work is sent SIGINT again.
INTERRUPT_GRACE_S = 30.0
RESEND_S = 1.0
# Building the model (protocol.BUILDING; a user's builder included, which may never return)
# gets the --seconds budget, and at least BUILD_MIN_S (building a built-in
# workload takes a few seconds on a CPU; the first trace and compile come later, in the steps).
BUILD_MIN_S = 30.0
# How often a silent child is checked for having exited (with its pipe held open by another).
_EXIT_CHECK_S = 1.0


@dataclass
class ChildRun:
    """What a measuring child left: its last message, how it ended, what the monitor saw."""

    final: dict[str, Any]
    failure: str | None  # why no final message came (hung, killed, interrupted), else None
    interrupted: bool
    monitor: Monitor | None
    windows: dict[str, MonitorSummary] = field(default_factory=dict)  # by label
    # its exit code (negative: the signal that ended it); None where this process killed it
    code: int | None = None


def run_child(
    job: str,
    payload: dict[str, Any],
    device: str | None,
    on_message: Callable[[dict[str, Any]], None],
    stall_s: float = STALL_S,
    window_phase: str = "measuring",
    deadlines: dict[str, tuple[float, str]] | None = None,
    monitored: bool = True,
) -> ChildRun:
    """Run ``job`` in ``python -m gpuscout.measure.child``, monitored from this process.

    Ctrl-C (or a signal the caller turns into KeyboardInterrupt) is passed on to the child as
    SIGINT, and its answer is still read: a job that stops cleanly reports what it measured.
    The child runs in its own session, so a terminal's Ctrl-C reaches it once, from here. It
    gets INTERRUPT_GRACE_S in all to stop (its progress does not extend that), is sent SIGINT
    again if it goes on reporting (it missed the first), then is killed; a second Ctrl-C kills
    it at once.
    Its last message (a result, report or error) ends the reading: the child's whole process
    group (whatever the user's code forked or left running, see
    :mod:`gpuscout.measure.process_group`) is ended EXIT_GRACE_S later at most, on every path,
    and the message is returned to be stored.
    ``deadlines``: phase -> (seconds until the child's next word, why it failed if none came),
    for phases that can block for ever (a worker waiting for others that never connect).
    A signal that was received but swallowed before (see :mod:`gpuscout.core.interrupts`) stops
    this before a child starts, and one swallowed while the child runs interrupts it at its
    next message.
    ``monitored``: False where no device is used (a trace): no monitor is started.
    """
    interrupts.raise_if_received()
    read_fd, write_fd = os.pipe()
    with _deferred_interrupts() as pending:  # a signal now is handled once the child is told
        with _sigint_blocked():
            proc = subprocess.Popen(
                [sys.executable, "-m", "gpuscout.measure.child", str(write_fd), str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=_stderr_fd(),
                pass_fds=(write_fd,),
                text=True,
                start_new_session=True,
            )
        os.close(write_fd)
        monitor = start_monitor(proc.pid, device) if monitored else None
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"job": job, "payload": payload}))
        proc.stdin.close()
    stop = _Stopping(proc)
    limit = _Limit(stall_s, "")
    unread = bytearray()

    def exited() -> bool:
        return has_exited(proc.pid)

    messages = _messages(read_fd, lambda: limit.seconds, unread, exited)
    final: dict[str, Any] = {}
    windows: dict[str, MonitorSummary] = {}
    failure: str | None = None
    killed = False
    while True:
        try:
            if (pending or interrupts.received) and not stop.interrupted:
                raise KeyboardInterrupt
            for message in messages:
                if stop.interrupted:
                    stop.missed(message)
                else:
                    seconds, why = (deadlines or {}).get(message.get("phase", ""), (stall_s, ""))
                    limit = _Limit(seconds, why)
                if message.get("phase") == window_phase and monitor is not None:
                    monitor.begin_window("the training steps (warm-up included)")
                if "window" in message:  # the child marks a stretch to summarise
                    if monitor is not None and message["window"] == "start":
                        monitor.begin_window(message["label"])
                    elif monitor is not None:
                        windows[message["label"]] = monitor.summary()
                elif "phase" in message or "progress" in message:
                    if monitor is not None and "elapsed_s" in message.get("progress", {}):
                        p = message["progress"]  # anchors the steps to the monitor's clock
                        monitor.step_progress(int(p["steps"]), float(p["elapsed_s"]))
                    on_message(message)
                    if interrupts.received and not stop.interrupted:
                        raise KeyboardInterrupt  # one that on_message's code swallowed
                else:
                    final = message
                    break  # its last word: a forked worker may hold the pipe open for ever
            break
        except _Stalled:
            if stop.interrupted:
                failure = (
                    f"{INTERRUPTED}; the measuring process had not stopped "
                    f"{INTERRUPT_GRACE_S:g} s after the signal and was killed"
                )
            else:
                failure = limit.why or (
                    f"the measurement hung: no progress for {stall_s:g} s (a wedged device or "
                    "driver, or a step slower than that)"
                )
                failure += "; the measuring process was killed"
            kill_group(proc)
            killed = True
            break
        except KeyboardInterrupt:
            if stop.interrupted:  # a second Ctrl-C: stop waiting for the child
                kill_group(proc)
                break
            stop.begin()
            # A total limit from now: the child's progress (it may have missed the signal)
            # must not extend it, as it would a silence limit.
            messages = _messages(read_fd, stop.seconds_left, unread, exited)
    os.close(read_fd)
    code = end_group(proc, EXIT_GRACE_S if final else INTERRUPT_GRACE_S)
    if not final and failure is None:
        failure = INTERRUPTED if stop.interrupted else _death(code)
    return ChildRun(final, failure, stop.interrupted, monitor, windows, None if killed else code)


def _stderr_fd() -> int:
    """Where the child's stdout goes: this command's stderr (what the user's code prints must
    not corrupt the command's output), or the process's own where ``sys.stderr`` is no file
    (a caller that captures it in a buffer)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


class _Stopping:
    """The parent's side of an interrupted child: when it was told, and telling it again.

    The child takes SIGINT from the first line of its module on, but a signal that arrives
    before (the interpreter starting, with SIGINT inherited as ignored) is lost. A child that
    keeps reporting progress RESEND_S after the signal missed it: it is sent again, and killed
    INTERRUPT_GRACE_S after the first, whatever it says.
    """

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.interrupted = False
        self.deadline = 0.0
        self.sent = 0.0

    def begin(self) -> None:
        self.interrupted = True
        self.deadline = time.monotonic() + INTERRUPT_GRACE_S
        self._send()

    def seconds_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def missed(self, message: dict[str, Any]) -> None:
        """A phase or progress message after the signal: the child is still working."""
        if ("phase" in message or "progress" in message) and (
            time.monotonic() - self.sent >= RESEND_S
        ):
            self._send()

    def _send(self) -> None:
        self.sent = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGINT)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread, so that a child started now inherits it blocked: a
    SIGINT sent while its interpreter starts waits, instead of killing it or raising in the
    middle of an import (a traceback), until the child's first line takes it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[list[int]]:
    """Hold back SIGINT, SIGTERM and SIGHUP (where Python handles them) while the child is
    started and sent its job; yields the list of those that came, to act on after.

    An interrupt raised halfway through (the child started, its job not yet written) would
    leave a child that never hears of it. Only the main thread can set handlers; elsewhere
    this does nothing.
    """
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    held = {
        sig: handler
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        if callable(handler := signal.getsignal(sig))
    }

    def hold(signum: int, _frame: object) -> None:
        pending.append(signum)

    for sig in held:
        signal.signal(sig, hold)
    try:
        yield pending
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)


def run_isolated(
    config: BenchConfig,
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    stall_s: float = STALL_S,
) -> RunResult:
    """Like :func:`gpuscout.measure.bench`, but in a child process, with the device monitor.

    A child that says nothing for ``stall_s`` seconds is killed and the run stored as hung.
    """
    check(config)  # bad input fails here, before a child (and TensorFlow) starts
    phases: set[str] = set()

    def relay(message: dict[str, Any]) -> None:
        if "phase" in message:
            phases.add(message["phase"])
        if "progress" in message and on_progress:
            p = message["progress"]
            on_progress(Progress(**{**p, "rule": StopRule(**p["rule"])}))
        elif "phase" in message and on_phase:
            on_phase(message["phase"])

    why = (
        f"the workers did not all connect within {config.worker_timeout_s:g} s "
        "(--worker-timeout): a worker was not started, was given another --workers list, or "
        "cannot be reached at its address (firewall, wrong host)"
    )
    deadlines = {distribute.CONNECTING: (config.worker_timeout_s, why)}
    build_s = build_limit(config)
    if build_s < stall_s:
        deadlines[BUILDING] = (
            build_s,
            f"building the model took more than {build_s:g} s (the limit for building is the "
            f"--seconds budget, at least {BUILD_MIN_S:g} s): a model builder that never "
            "returns, or one slower than that",
        )
    run = run_child(
        "bench",
        config.model_dump(mode="json"),
        distribute.monitored(config),
        relay,
        stall_s,
        deadlines=deadlines,
    )
    final = run.final
    if "result" in final:
        result = RunResult.model_validate(final["result"])
        result = result.model_copy(update={"step_times_s": final["step_times_s"]})
    elif "user_error" in final:
        if run.monitor:
            run.monitor.stop()
        raise UserError(final["user_error"], final.get("fix"))
    elif "error" in final:
        if run.monitor:
            run.monitor.stop()
        raise GpuscoutError(final["error"])
    else:
        result = failed(config, "error", run.failure or "no result", BUILDING in phases)
    if result.device == NOT_RECORDED and config.mode == "train" and BUILDING not in phases:
        # the backend chooses the device before it builds: it stopped before choosing
        result = result.model_copy(update={"device": NOT_RESOLVED})
    return attach(result, run.monitor)


def build_limit(config: BenchConfig) -> float:
    """Seconds the child may spend building the model: the run's budget, at least BUILD_MIN_S."""
    return max(BUILD_MIN_S, config.seconds or 0.0)


@dataclass(frozen=True)
class _Limit:
    """How long the child may stay silent now, and what silence that long means."""

    seconds: float
    why: str


class _Stalled(Exception):
    pass


def _messages(
    fd: int,
    stall_s: Callable[[], float],
    buffer: bytearray,
    exited: Callable[[], bool] = lambda: False,
) -> Iterator[dict[str, Any]]:
    """JSON lines from the child until it closes the pipe, or has exited and said all it
    wrote (a process it forked may hold the pipe open after it); _Stalled after ``stall_s()``
    seconds of silence (asked again before each wait: the allowed silence depends on the phase),
    or at once when it is 0 (an interrupted child's time is up, however much it still says).

    The caller owns ``fd`` and ``buffer`` (bytes read, not yet a whole line): after a Ctrl-C it
    reads on with a new reader, from where the last one stopped.
    """
    while True:
        while b"\n" in buffer:
            end = buffer.index(b"\n")
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            yield json.loads(line)
        seconds = stall_s()
        if seconds <= 0:
            raise _Stalled
        silent_until = time.monotonic() + seconds
        ready: list[int] = []
        while not ready:  # in slices, to notice a child that exited
            left = silent_until - time.monotonic()
            if left <= 0:
                raise _Stalled
            ready, _, _ = select.select([fd], [], [], min(left, _EXIT_CHECK_S))
            if not ready and exited():
                return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk


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
