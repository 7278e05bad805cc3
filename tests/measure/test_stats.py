"""Statistics on synthetic step-time series with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscout.measure import stats


def _steady(n: int, seed: int = 0, level: float = 0.010, cv: float = 0.02) -> np.ndarray:
    return np.random.default_rng(seed).normal(level, level * cv, n)


def test_planted_warmup_is_found() -> None:
    series = np.concatenate([[2.0, 0.5, 0.1, 0.03], _steady(200)])
    assert stats.detect_warmup(series) == 4


def test_gradual_warmup_ends_within_tolerance_of_steady_state() -> None:
    decay = 0.010 * (1 + np.exp(-np.arange(40) / 5))  # 2x slower at first, settles smoothly
    series = np.concatenate([decay, _steady(200, cv=0.005)])
    w = stats.detect_warmup(series)
    assert w is not None
    assert 10 <= w <= 20  # where the excess falls under ~5%
    assert series[w] <= 0.010 * 1.06


def test_no_warmup_in_a_steady_series() -> None:
    assert stats.detect_warmup(_steady(100)) == 0


def test_warmup_needs_enough_steps() -> None:
    assert stats.detect_warmup([1.0, 0.5, 0.4]) is None


def test_still_warming_up_is_not_called_steady() -> None:
    assert stats.detect_warmup(np.linspace(1.0, 0.5, 30)) is None


def test_a_late_outlier_is_not_warmup() -> None:
    series = _steady(100)
    series[60] = 0.5
    assert stats.detect_warmup(series) == 0


def test_interval_narrows_as_samples_grow() -> None:
    widths = []
    for n in (20, 80, 320, 1280):
        s = stats.summarize(_steady(n, seed=n, cv=0.05))
        widths.append(s.rel_halfwidth)
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] < widths[0] / 4


def test_interval_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(1)
    hits = 0
    trials = 400
    for _ in range(trials):
        x = rng.lognormal(mean=0.0, sigma=0.3, size=50)  # skewed, true median = 1.0
        lo, hi = stats.median_ci(x)
        hits += lo <= 1.0 <= hi
    assert 0.92 <= hits / trials <= 0.995


def test_interval_undefined_below_six_samples() -> None:
    lo, hi = stats.median_ci([1.0, 1.1, 0.9])
    assert np.isnan(lo) and np.isnan(hi)
    assert stats.summarize([1.0, 1.1, 0.9]).rel_halfwidth == float("inf")


def test_planted_outliers_are_flagged_and_only_they() -> None:
    x = _steady(200, cv=0.01)
    planted = [17, 99, 150]
    x[planted] = 0.05
    mask = stats.outlier_mask(x)
    assert sorted(np.nonzero(mask)[0].tolist()) == planted
    assert stats.summarize(x).outliers == 3


def test_summary_fields() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    s = stats.summarize(x)
    assert s.median == pytest.approx(5.5)
    assert s.mean == pytest.approx(5.5)
    assert s.p5 == pytest.approx(1.45)
    assert s.p95 == pytest.approx(9.55)
    assert s.cv == pytest.approx(np.std(x, ddof=1) / 5.5)
    assert s.ci_low <= s.median <= s.ci_high


def test_summarize_rejects_empty() -> None:
    with pytest.raises(ValueError):
        stats.summarize([])


def test_drift_widens_the_interval_where_step_statistics_would_not() -> None:
    """Throughput drifting +-10% over stretches of ~100 steps: the per-step interval looks
    precise, the block-median interval shows the drift."""
    rng = np.random.default_rng(3)
    n = 600
    x = 0.010 * (1 + 0.1 * np.sin(np.arange(n) * 2 * np.pi / 200)) * rng.normal(1, 0.01, n)
    naive_lo, naive_hi = stats.median_ci(x)
    lo, hi = stats.drift_aware_median_ci(x)
    assert (hi - lo) > 2 * (naive_hi - naive_lo)
    assert lo <= np.median(x) <= hi


def test_block_medians_keep_every_step() -> None:
    x = np.arange(65, dtype=float)
    m = stats.block_medians(x, blocks=30)
    assert len(m) == 30 and m[-1] == np.median(x[58:])


def test_a_wandering_machine_is_not_warming_up() -> None:
    """Step 0 is the warm-up; after it the speed wanders +-10% (seen on a shared 2-core VM)."""
    rng = np.random.default_rng(7)
    wander = 1.0 + 0.08 * np.sin(np.arange(80) / 6) + rng.normal(0, 0.04, 80)
    series = np.concatenate([[10.0], wander])
    assert stats.detect_warmup(series) == 1


# ResNet-50, batch 8, on the 2-core development CPU (gpuscout run, seconds): only step 0 is
# warm-up; the rest vary with CV ~9% and spikes.
RESNET50_CPU_STEPS = [
    8.716,
    0.993,
    0.957,
    0.879,
    0.882,
    1.031,
    0.988,
    1.032,
    1.181,
    1.003,
    0.904,
    0.911,
    1.213,
    0.895,
    0.907,
    1.005,
    1.049,
    0.894,
    0.884,
    0.88,
    0.883,
    0.869,
    0.982,
    0.945,
    1.06,
    1.31,
    0.889,
    0.934,
    0.887,
    0.831,
    0.856,
    0.891,
    0.926,
    0.883,
    0.86,
    0.879,
    0.917,
    0.93,
    0.906,
    0.872,
    0.875,
    1.03,
    0.898,
    0.934,
    0.862,
    0.954,
    0.893,
    0.858,
    0.81,
    0.888,
    0.883,
    0.902,
]


def test_noisy_steps_after_warmup_are_not_warmup() -> None:
    """Requiring 5 consecutive steady steps called the first 17 steps warm-up here."""
    w = stats.detect_warmup(RESNET50_CPU_STEPS)
    assert w is not None and 1 <= w <= 2


# ResNet-50 on the same CPU, 84 measured steps after 4 of warm-up (seconds).
RESNET50_CPU_MEASURED = [
    0.98,
    1.186,
    1.086,
    0.827,
    0.822,
    0.854,
    0.944,
    0.984,
    1.054,
    1.051,
    0.907,
    0.903,
    0.995,
    0.982,
    0.984,
    0.917,
    0.872,
    0.89,
    0.933,
    1.035,
    0.9,
    1.11,
    0.98,
    1.108,
    1.046,
    0.945,
    0.905,
    0.934,
    0.948,
    0.895,
    0.932,
    1.094,
    1.074,
    0.916,
    0.872,
    0.987,
    0.961,
    0.859,
    0.911,
    0.961,
    0.927,
    0.899,
    0.989,
    0.84,
    0.858,
    0.928,
    0.881,
    0.9,
    1.091,
    1.004,
    0.917,
    0.912,
    0.861,
    0.864,
    0.83,
    0.806,
    0.872,
    0.838,
    0.877,
    0.95,
    0.967,
    0.912,
    0.88,
    0.928,
    0.931,
    0.953,
    0.948,
    0.859,
    0.893,
    0.863,
    0.863,
    0.899,
    0.859,
    0.875,
    0.871,
    0.873,
    0.844,
    0.844,
    0.881,
    0.889,
    0.886,
    0.972,
    0.974,
    0.974,
]


def test_interval_is_centred_on_the_median_with_few_steps_per_block() -> None:
    """Blocks of 2-3 steps have 'medians' that are means: the interval slid off the median
    (8.13-8.79 samples/s around 8.75). Blocks of 5+ steps, laid around the median, do not."""
    x = np.array(RESNET50_CPU_MEASURED)
    lo, hi = stats.drift_aware_median_ci(x)
    med = float(np.median(x))
    assert lo < med < hi
    assert max(hi - med, med - lo) < 2 * min(hi - med, med - lo)


def test_a_machine_that_speeds_up_mid_run_is_not_warming_up() -> None:
    """Thousands of noisy steps (CV 40%) with a 15% speed-up halfway through the tail: a
    significant but weak trend, not warm-up."""
    rng = np.random.default_rng(9)
    level = np.where(np.arange(6000) < 4500, 1.0, 0.85) * 0.0013
    x = np.concatenate([[0.5], level * rng.lognormal(0, 0.35, 6000)])
    assert stats.detect_warmup(x) == 1
