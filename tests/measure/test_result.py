"""Warnings on planted outcomes: each fires when it should, and says what to do."""

from __future__ import annotations

import numpy as np

from gpuscout.measure.protocol import Outcome
from gpuscout.measure.result import outcome_warnings
from gpuscout.measure.stats import summarize


def _outcome(measured: np.ndarray, stop: str = "converged", method: str = "detected") -> Outcome:
    times = (1.0, *measured.tolist())
    return Outcome(times, 1, method, summarize(measured), stop, float(sum(times)))


def _steady(n: int, cv: float) -> np.ndarray:
    return np.random.default_rng(0).normal(0.1, 0.1 * cv, n)


def test_a_clean_run_has_no_warnings() -> None:
    assert outcome_warnings(_outcome(_steady(200, 0.01))) == []


def test_unstable() -> None:
    (w,) = outcome_warnings(_outcome(np.abs(_steady(4000, 0.2))))
    assert w.startswith("unstable: step times vary with CV") and "--seconds" in w


def test_budget_ran_out_before_the_target() -> None:
    warnings = outcome_warnings(_outcome(np.abs(_steady(30, 0.3)), stop="budget"))
    assert any("time budget ran out" in w and "Raise --seconds" in w for w in warnings)


def test_too_few_steps() -> None:
    warnings = outcome_warnings(_outcome(_steady(8, 0.01), stop="steps"))
    assert any("only 8 measured steps" in w for w in warnings)


def test_no_steady_state() -> None:
    warnings = outcome_warnings(_outcome(_steady(200, 0.01), method="not found"))
    assert any("no steady state was detected" in w and "--warmup-steps" in w for w in warnings)


def test_many_outliers() -> None:
    x = _steady(200, 0.01)
    x[::10] = 0.5
    warnings = outcome_warnings(_outcome(x))
    assert any("20 of 200 steps are outliers" in w for w in warnings)


def test_fixed_steps_that_leave_a_wide_interval() -> None:
    warnings = outcome_warnings(_outcome(np.abs(_steady(25, 0.3)), stop="steps"))
    assert any(w.startswith("imprecise: after the fixed --steps") for w in warnings)
