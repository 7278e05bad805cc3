"""The measurement protocol: when warm-up is over and when to stop measuring.

Unlike a fixed "10 warm-up + 100 steps", the protocol looks at the step times as they come:
warm-up (tracing, XLA compilation, autotuning) ends where the series settles
(:func:`stats.detect_warmup`), and measurement stops as soon as the 95% interval of the median
step time is within +-2%, or when the time budget is spent, whichever comes first. Every raw
step time is kept. The step itself is an opaque callable that returns only once the device
has finished the step, so this module needs no TensorFlow and is tested with a fake clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gpuscout.measure.loss_check import LossWatch
from gpuscout.measure.stats import (
    TARGET_REL_CI,
    StepSummary,
    detect_warmup,
    scipy_stats,
    summarize,
)

# The phase a backend reports while it builds the model: the runner gives it its own deadline
# (a user's builder may never return), so both sides use this one name.
BUILDING = "building the model"
# How the median's interval is made (stats.py), said in every backend's run the same words
INTERVAL_ASSUMPTION = (
    "the median's 95% interval: order statistics per step, widened from 60 steps on to "
    "those of the medians of 12-30 consecutive blocks, so slow drift widens it"
)
MIN_MEASURED_FOR_BUDGET_STOP = 2
CHECK_EVERY_S = 0.1  # re-evaluate warm-up and the interval at most this often (wall time)


@dataclass(frozen=True)
class StopRule:
    """When to stop. ``fixed_steps`` replaces the adaptive rule by a count of measured steps;
    ``fixed_warmup`` replaces warm-up detection by a count of discarded steps."""

    budget_s: float | None = 60.0
    target_rel_ci: float = TARGET_REL_CI
    min_measured: int = 20
    min_measure_s: float = 2.0  # converge no sooner: throughput drifts over seconds
    fixed_steps: int | None = None
    fixed_warmup: int | None = None
    max_warmup_steps: int = 2000
    max_warmup_s: float = 300.0


@dataclass(frozen=True)
class Progress:
    """A snapshot for a progress display."""

    phase: str  # "warmup" | "measure"
    steps: int
    measured: int
    elapsed_s: float
    rel_halfwidth: float | None
    rule: StopRule


@dataclass(frozen=True)
class Outcome:
    times: tuple[float, ...]  # every step, warm-up included, seconds
    warmup_steps: int
    warmup_method: str  # "detected" | "fixed" | "not found" (steady state never seen)
    summary: StepSummary  # of the measured steps only
    stop_reason: str  # "converged" | "budget" | "steps" | "chief" (told by the chief worker)
    elapsed_s: float
    # Why the training itself is broken (a NaN/Inf loss, divergence), naming the step; None
    # when it is not, or when the loop gave no loss (see gpuscout.measure.loss_check).
    broken: str | None = None

    @property
    def measured_times(self) -> tuple[float, ...]:
        return self.times[self.warmup_steps : self.warmup_steps + self.summary.n]

    @property
    def warmup_seconds(self) -> float:
        return float(sum(self.times[: self.warmup_steps]))


class Protocol:
    """Decides, step by step, when warm-up is over and when to stop.

    Fed one step time at a time (:meth:`add`), so it serves both a loop gpuscout drives
    (:func:`run_protocol`) and Keras' ``model.fit``, which drives itself and reports through a
    callback.
    """

    def __init__(
        self,
        rule: StopRule,
        on_progress: Callable[[Progress], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        scipy_stats()  # its first import takes a second: here, before the budget's clock starts
        self.rule = rule
        self.on_progress = on_progress
        self.clock = clock
        self.times: list[float] = []
        self.start = clock()
        self._forced_warmup: int | None = rule.fixed_warmup
        self._method = "fixed" if rule.fixed_warmup is not None else "not found"
        self._last_check = float("-inf")
        self._stop_at: int | None = None  # --steps: the step count to stop at, once known
        self._last_found: int | None = None  # the latest warm-up detection
        self.losses = LossWatch()  # fed by observe_loss: the loop's own fetched loss
        if rule.fixed_steps is not None and rule.fixed_warmup is not None:
            self._stop_at = rule.fixed_warmup + rule.fixed_steps

    def add(self, step_time: float) -> Outcome | None:
        """Record one step; return the outcome when the rule says stop, else None."""
        rule, times = self.rule, self.times
        times.append(step_time)
        now = self.clock()
        elapsed = now - self.start
        if self._stop_at is not None and len(times) >= self._stop_at:
            assert rule.fixed_steps is not None
            return self._finish(
                self._stop_at - rule.fixed_steps, rule.fixed_steps, "steps", elapsed
            )
        over_budget = rule.budget_s is not None and elapsed >= rule.budget_s
        # Statistics cost milliseconds: evaluate them at most every CHECK_EVERY_S.
        if not over_budget and now - self._last_check < CHECK_EVERY_S:
            return None
        self._last_check = now

        n = len(times)
        warmup = self._forced_warmup
        if warmup is None:
            # A noisy stretch can hide a steady state that was already seen: then the last
            # detection stands. Giving up applies only to a warm-up never seen at all.
            found = detect_warmup(times)
            warmup = self._last_found = found if found is not None else self._last_found
            self._method = "detected" if warmup is not None else "not found"
            if warmup is None and (n >= rule.max_warmup_steps or elapsed >= rule.max_warmup_s):
                self._forced_warmup = warmup = n  # give up detecting; measure from here
        measured = n - warmup if warmup is not None else 0

        if warmup is not None and rule.fixed_steps is not None:
            # Freeze the warm-up where it was first seen, so exactly fixed_steps are measured.
            self._forced_warmup = warmup
            self._stop_at = warmup + rule.fixed_steps
            if measured >= rule.fixed_steps:
                return self._finish(warmup, rule.fixed_steps, "steps", elapsed)
        summary = summarize(times[warmup:]) if warmup is not None and measured >= 2 else None
        if self.on_progress:
            self.on_progress(
                Progress(
                    phase="measure" if warmup is not None else "warmup",
                    steps=n,
                    measured=measured,
                    elapsed_s=elapsed,
                    rel_halfwidth=summary.rel_halfwidth if summary else None,
                    rule=rule,
                )
            )
        if (
            rule.fixed_steps is None
            and warmup is not None
            and summary is not None
            and measured >= rule.min_measured
            and sum(times[warmup:]) >= rule.min_measure_s
            and summary.rel_halfwidth <= rule.target_rel_ci
        ):
            return self._finish(warmup, measured, "converged", elapsed)
        if over_budget:
            last = warmup if warmup is not None else n // 2  # no steady state: keep 2nd half
            if n - last >= MIN_MEASURED_FOR_BUDGET_STOP:
                return self._finish(last, n - last, "budget", elapsed)
        return None

    def observe_loss(self, loss: object) -> None:
        """One step's loss, already on the host (or ready: a finished step's scalar), read
        outside the timed step; None (a loop that gives no loss) is ignored."""
        if loss is not None:
            self.losses.add(loss)  # type: ignore[arg-type]

    def run(self, step: Callable[[], object], returns_loss: bool = False) -> Outcome:
        """Call ``step`` (which must return only once the device is done) until told to stop.

        ``returns_loss``: what ``step`` returns is its loss, read after its time is taken.
        """
        while True:
            t0 = self.clock()
            loss = step()
            dt = self.clock() - t0
            if returns_loss:
                self.observe_loss(loss)
            outcome = self.add(dt)
            if outcome is not None:
                return outcome

    def run_with_workers(
        self, step: Callable[[], object], chief: bool, agree: Callable[[float], float]
    ) -> Outcome:
        """``run`` over several workers, on each of them: every worker must run the same
        number of steps, or the last collective waits for ever. The chief's protocol decides;
        after each timed step ``agree`` (an all-reduce SUM of one float over the workers,
        outside the timing) tells every worker whether the chief says stop. ``step`` returns
        its loss, ready; a worker that is not the chief concludes where it was told to stop."""
        while True:
            t0 = self.clock()
            loss = step()
            took = self.clock() - t0
            self.observe_loss(loss)
            outcome = self.add(took)
            if agree(1.0 if chief and outcome is not None else 0.0) > 0:
                return outcome if outcome is not None else self.conclude()

    def conclude(self) -> Outcome:
        """The outcome so far, for a loop that another process told to stop (a worker that
        is not the chief): warm-up as last detected, else the first half."""
        n = len(self.times)
        warmup = self._forced_warmup if self._forced_warmup is not None else self._last_found
        if warmup is None or n - warmup < 1:
            warmup = n // 2
        reason = "steps" if self.rule.fixed_steps is not None else "chief"
        return self._finish(warmup, n - warmup, reason, self.clock() - self.start)

    def _finish(self, warmup: int, measured: int, reason: str, elapsed: float) -> Outcome:
        return Outcome(
            times=tuple(self.times),
            warmup_steps=warmup,
            warmup_method=self._method,
            summary=summarize(self.times[warmup : warmup + measured]),
            stop_reason=reason,
            elapsed_s=elapsed,
            broken=self.losses.verdict(),
        )


def run_protocol(
    step: Callable[[], object],
    rule: StopRule,
    on_progress: Callable[[Progress], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Outcome:
    """Run ``step`` until ``rule`` says stop."""
    return Protocol(rule, on_progress, clock).run(step)
