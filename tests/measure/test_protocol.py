"""The stopping rule, driven by planted step times and a fake clock (no sleeping)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gpuscout.measure.protocol import Progress, StopRule, run_protocol


class FakeDevice:
    """A 'device' whose steps take planted times on a fake clock."""

    def __init__(self, times: Iterator[float]) -> None:
        self.now = 0.0
        self.times = times
        self.steps = 0

    def clock(self) -> float:
        return self.now

    def step(self) -> None:
        self.now += next(self.times)
        self.steps += 1


def series(warmup: list[float], level: float, cv: float, seed: int = 0) -> Iterator[float]:
    yield from warmup
    rng = np.random.default_rng(seed)
    while True:
        yield float(rng.normal(level, level * cv))


def test_stops_when_interval_within_target() -> None:
    dev = FakeDevice(series([5.0, 1.0, 0.3], level=0.1, cv=0.03))
    out = run_protocol(dev.step, StopRule(budget_s=1000), clock=dev.clock)
    assert out.stop_reason == "converged"
    assert out.warmup_steps == 3 and out.warmup_method == "detected"
    assert out.warmup_seconds == 6.3
    assert out.summary.rel_halfwidth <= 0.02
    assert out.summary.n >= 20
    assert len(out.times) == dev.steps  # every raw step kept
    assert abs(out.summary.median - 0.1) < 0.003


def test_noisier_steps_need_more_samples() -> None:
    quiet = run_protocol(
        (d := FakeDevice(series([], 0.1, 0.02))).step, StopRule(budget_s=1e6), clock=d.clock
    )
    noisy = run_protocol(
        (e := FakeDevice(series([], 0.1, 0.10))).step, StopRule(budget_s=1e6), clock=e.clock
    )
    assert noisy.summary.n > 3 * quiet.summary.n


def test_budget_stops_a_run_that_cannot_converge() -> None:
    dev = FakeDevice(series([], level=1.0, cv=0.5))
    out = run_protocol(dev.step, StopRule(budget_s=30), clock=dev.clock)
    assert out.stop_reason == "budget"
    assert out.elapsed_s >= 30
    assert out.summary.rel_halfwidth > 0.02


def test_fixed_steps_measures_exactly_that_many_after_fixed_warmup() -> None:
    dev = FakeDevice(series([9.0] * 10, level=0.2, cv=0.01))
    out = run_protocol(
        dev.step, StopRule(budget_s=None, fixed_steps=100, fixed_warmup=10), clock=dev.clock
    )
    assert out.stop_reason == "steps"
    assert out.warmup_steps == 10 and out.warmup_method == "fixed"
    assert out.summary.n == 100
    assert len(out.measured_times) == 100
    assert max(out.measured_times) < 1.0


def test_fixed_steps_with_detected_warmup() -> None:
    dev = FakeDevice(series([3.0, 2.0], level=0.2, cv=0.01))
    out = run_protocol(dev.step, StopRule(budget_s=None, fixed_steps=30), clock=dev.clock)
    assert out.warmup_steps == 2 and out.summary.n == 30


def test_warmup_that_never_settles_is_reported() -> None:
    falling = (10.0 / (i + 1) for i in range(10**6))  # keeps getting faster
    dev = FakeDevice(falling)
    out = run_protocol(dev.step, StopRule(budget_s=25), clock=dev.clock)
    assert out.warmup_method == "not found"
    assert out.stop_reason == "budget"
    assert out.summary.n >= 2


def test_progress_reports_warmup_then_measurement() -> None:
    seen: list[Progress] = []
    dev = FakeDevice(series([5.0, 2.0], level=0.2, cv=0.02))
    run_protocol(dev.step, StopRule(budget_s=1000), on_progress=seen.append, clock=dev.clock)
    phases = [p.phase for p in seen]
    assert phases[0] == "warmup" and phases[-1] == "measure"
    assert "warmup" not in phases[phases.index("measure") :]


def test_fixed_steps_do_not_evaluate_statistics_every_step() -> None:
    """In model.fit the bookkeeping between steps could land in a step: keep it rare."""
    seen: list[Progress] = []
    dev = FakeDevice(series([], level=0.001, cv=0.01))
    out = run_protocol(
        dev.step,
        StopRule(budget_s=None, fixed_steps=1000, fixed_warmup=10),
        on_progress=seen.append,
        clock=dev.clock,
    )
    assert out.summary.n == 1000 and len(out.times) == 1010
    assert len(seen) <= 1010 * 0.001 / 0.1 + 2  # about one evaluation per 0.1 s of steps


def test_a_slow_stretch_after_warmup_does_not_reset_it() -> None:
    """Seen on a 13k-step run: warm-up found, then one check on a slow stretch saw no steady
    state, and the protocol gave up and threw half the steps away."""

    def times() -> Iterator[float]:
        rng = np.random.default_rng(2)
        yield 0.5
        for _ in range(2500):
            yield 0.01 * rng.normal(1, 0.01)
        for level in np.linspace(1.4, 1.0, 2500):  # slow, then recovering
            yield 0.01 * level * rng.normal(1, 0.01)
        while True:
            yield 0.01 * rng.normal(1, 0.01)

    dev = FakeDevice(times())
    out = run_protocol(dev.step, StopRule(budget_s=70, target_rel_ci=1e-6), clock=dev.clock)
    assert out.stop_reason == "budget"
    assert out.warmup_method == "detected"
    assert out.warmup_steps == 1


def test_workers_stop_together_when_the_chief_says_so() -> None:
    """Two workers' protocols side by side: each step's flags are summed as the all-reduce
    would; the chief stops at its fixed step count, the other worker, whose own rule would
    run far longer, stops after the very same step and concludes from what it measured."""
    from gpuscout.measure.protocol import Protocol

    now = [0.0]

    def clock() -> float:
        return now[0]

    def step() -> float:
        now[0] += 0.5
        return 1.0  # its loss

    chief = Protocol(StopRule(budget_s=None, fixed_steps=6, fixed_warmup=2), clock=clock)
    other = Protocol(StopRule(budget_s=1e6), clock=clock)
    said: list[float] = []

    def chief_agree(says: float) -> float:
        said.append(says)
        return says  # the other worker says 0 until told

    stopped = chief.run_with_workers(step, True, chief_agree)
    told = iter(said)  # the other worker hears the sums the chief's steps produced
    concluded = other.run_with_workers(step, False, lambda says: says + next(told))
    assert len(stopped.times) == len(concluded.times) == 8  # 2 warm-up + 6 measured
    assert len(stopped.measured_times) == 6 and concluded.stop_reason == "chief"
