"""The soak loop, for every backend: train for N minutes, keeping what a verdict needs.

Memory stays bounded however long it runs: every step's loss is checked and counted, but
only the warm-up, the first window after it and a sliding last window of step times are kept.
A Ctrl-C (SIGINT from the parent) ends the loop between steps, and what was measured is
reported like a finished run. A backend supplies one synchronised step that returns its loss.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from gpuscout.core.errors import is_oom
from gpuscout.measure.loss_check import finite
from gpuscout.measure.stats import detect_warmup

MAX_WARMUP_STEPS = 2000
PROGRESS_EVERY_S = 1.0
BLOCK_S = 1.0  # after warm-up, steps and their time are summed per block of this long


def window_seconds(planned_s: float) -> float:
    """The first and last windows compared for drift: 10% of the run, 5 s to 10 min."""
    return min(max(0.1 * planned_s, 5.0), 600.0)


class SoakLoop:
    def __init__(self, planned_s: float, emit: Callable[[dict[str, Any]], None]) -> None:
        self.planned_s = planned_s
        self.window_s = window_seconds(planned_s)
        self.emit = emit
        self.warmup: list[float] = []
        self.warmup_done = False
        self.first: list[float] = []
        self.last: deque[tuple[float, float]] = deque()  # (end time, step time)
        self.steps = 0
        self.bad_losses = 0
        self.first_bad_step: int | None = None
        self.error: str | None = None
        self.interrupted = False
        self.start = 0.0
        self.elapsed = 0.0
        self.first_window_end = 0.0
        self.blocks: list[tuple[float, int, float]] = []  # (end, steps, seconds in steps)
        self._block = [0.0, 0, 0.0]

    def run(self, step: Callable[[], float]) -> None:
        self.start = last_progress = time.perf_counter()
        try:
            while self.elapsed < self.planned_s:
                t0 = time.perf_counter()
                loss = step()
                now = time.perf_counter()
                self._record(now - t0, now - self.start, loss)
                if not finite(loss):
                    break  # the run is ruined: the verdict says where
                if now - last_progress >= PROGRESS_EVERY_S:
                    last_progress = now
                    self._progress()
        except KeyboardInterrupt:
            self.interrupted = True
        except Exception as exc:  # an OOM or a device error ends the soak: that is its finding
            kind = "out of memory" if is_oom(exc) else type(exc).__name__
            text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            self.error = f"{kind}: {text}" if text else kind
        self.elapsed = time.perf_counter() - self.start

    def _record(self, dt: float, at: float, loss: float) -> None:
        self.steps += 1
        self.elapsed = at
        if not finite(loss):
            self.bad_losses += 1
            self.first_bad_step = self.first_bad_step or self.steps
        if not self.warmup_done:
            self.warmup.append(dt)
            n = len(self.warmup)
            found = detect_warmup(self.warmup) if n >= 10 and n % 10 == 0 else None
            if found is not None or n >= MAX_WARMUP_STEPS or at >= self.window_s:
                self.warmup_done = True
                cut = found if found is not None else n
                self.first = self.warmup[cut:]
                self.warmup = self.warmup[:cut]
                self.first_window_end = at + self.window_s
                self._block = [at, 0, 0.0]
            return
        block = self._block
        block[1] += 1
        block[2] += dt
        if at - block[0] >= BLOCK_S:
            self.blocks.append((round(at, 3), int(block[1]), block[2]))
            self._block = [at, 0, 0.0]
        if at <= self.first_window_end:
            self.first.append(dt)
        self.last.append((at, dt))
        while self.last and self.last[0][0] < at - self.window_s:
            self.last.popleft()

    def _progress(self) -> None:
        recent = [dt for _, dt in self.last] or self.first or self.warmup
        self.emit(
            {
                "progress": {
                    "soak": True,
                    "elapsed_s": self.elapsed,
                    "planned_s": self.planned_s,
                    "steps": self.steps,
                    "step_s": sum(recent) / len(recent) if recent else None,
                }
            }
        )

    def record(self) -> dict[str, Any]:
        complete = self.elapsed >= self.first_window_end + self.window_s
        return {
            "seconds": self.elapsed,
            "planned_seconds": self.planned_s,
            "window_seconds": self.window_s,
            "steps": self.steps,
            "warmup_times": self.warmup,
            "first_times": self.first,
            "last_times": [dt for _, dt in self.last] if complete else [],
            "blocks": self.blocks,
            "bad_losses": self.bad_losses,
            "first_bad_step": self.first_bad_step,
            "error": self.error,
            "interrupted": self.interrupted,
        }


def soak_steps(
    minutes: float, step: Callable[[], float], emit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """Run ``step`` for ``minutes`` (or until stopped) and return what the verdict needs."""
    emit({"phase": "soaking"})
    loop = SoakLoop(60.0 * minutes, emit)
    loop.run(step)
    return loop.record()
