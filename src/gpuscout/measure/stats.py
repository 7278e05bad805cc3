"""Statistics of a series of step times: warm-up, the median's interval, spread, outliers.

Pure functions over numpy arrays, so each can be tested on synthetic series with known answers.

Choices, and why:
- The headline is the *median* step time: one garbage-collection pause or a noisy neighbour
  moves a mean but not a median. The mean rate (samples / total time) is reported beside it.
- Its 95% interval is the distribution-free order-statistic interval for a quantile
  (``scipy.stats.quantile_test``): exact for any distribution of independent steps, cheap enough
  to recompute while measuring, and deterministic (a bootstrap would give a different interval
  every call). Steps are *not* independent on a real machine: throughput drifts over seconds
  (clock changes, other processes). So from ``BLOCKED_FROM`` steps on, the interval is also
  taken over the medians of 12-30 consecutive blocks ("batch medians"): drift between blocks
  widens it, where step-level order statistics would call a short lucky stretch precise.
- Warm-up is found from the data: it ends at the first step within a tolerance of the steady
  state (the median of the second half) whose window of ``window`` steps has a median within
  it too (a 5-step median window, so a later isolated slow step is an outlier, not warm-up).
- Outliers are flagged with the modified z-score on the MAD (Iglewicz and Hoaglin, > 3.5).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import ArrayLike, NDArray

CONFIDENCE = 0.95  # of every interval gpuscout reports
# Measuring stops once the median's interval is within +-2 % (bench's stopping rule).
TARGET_REL_CI = 0.02
MAD_TO_SIGMA = 1.4826
OUTLIER_Z = 3.5
WARMUP_WINDOW = 5
WARMUP_REL_TOL = 0.05
WARMUP_MAD_TOL = 3.0
WARMUP_DRIFT_TOL = 0.10
WARMUP_TREND_P = 0.01
WARMUP_TREND_TAU = -0.3
BLOCKS = 30  # at most this many blocks ...
MIN_BLOCK = 5  # ... of at least this many steps (a median of 2 steps is a mean)
MIN_BLOCKS = 12  # fewer blocks than this: per-step interval only
BLOCKED_FROM = MIN_BLOCKS * MIN_BLOCK


def scipy_stats() -> ModuleType:
    """``scipy.stats``, imported on first use. Its import takes about a second on this project's
    CPU machines, and a command's parent process (``bench``, ``scout``) reads only this module's
    constants: the measuring child imports it before its first timed step
    (``protocol.Protocol.run``), so the import never lands inside a measurement."""
    return importlib.import_module("scipy.stats")


def _as_array(times: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(times, dtype=np.float64)


def mad(x: ArrayLike) -> float:
    """Median absolute deviation (unscaled)."""
    a = _as_array(x)
    return float(np.median(np.abs(a - np.median(a))))


def detect_warmup(times: ArrayLike, window: int = WARMUP_WINDOW) -> int | None:
    """Number of leading steps that belong to warm-up, or None if no steady state is seen yet.

    The steady state is the median of the second half of the series, provided that half is not
    itself still clearly speeding up; a step is "steady" when it is no slower than that median
    plus max(5%, 3 sigma from the MAD). Warm-up ends at the first
    steady step whose window of ``window`` steps has a steady median. Needs ``2 * window`` steps.
    Later isolated slow steps are outliers, not warm-up.
    """
    t = _as_array(times)
    n = len(t)
    if n < 2 * window:
        return None
    tail = t[n // 2 :]
    ref = float(np.median(tail))
    sigma = MAD_TO_SIGMA * mad(tail)
    if _still_speeding_up(tail, ref):
        return None
    threshold = ref + max(WARMUP_REL_TOL * ref, WARMUP_MAD_TOL * sigma)
    # Warm-up ends at the first step that is itself steady and starts a window of `window`
    # steps whose median is steady: isolated slow steps later on are noise, not warm-up.
    medians = np.median(np.lib.stride_tricks.sliding_window_view(t, window), axis=1)
    hits = np.nonzero((t[: len(medians)] <= threshold) & (medians <= threshold))[0]
    return int(hits[0]) if len(hits) else None


def _still_speeding_up(tail: NDArray[np.float64], ref: float) -> bool:
    """A tail that is itself still getting faster is no steady state yet.

    Both must hold: its second half is over 10% faster than its first half, and the decline is
    a strong, real trend (Kendall's tau against step index <= -0.3 with p < 0.01; with
    thousands of steps any wander is "significant", so the strength matters). A machine whose
    speed wanders is not warming up: that is left to the drift-aware interval.
    """
    m = len(tail) // 2
    drift = float(np.median(tail[:m]) - np.median(tail[m:]))
    if drift <= WARMUP_DRIFT_TOL * ref:
        return False
    trend = scipy_stats().kendalltau(np.arange(len(tail)), tail)
    return bool(trend.statistic <= WARMUP_TREND_TAU and trend.pvalue < WARMUP_TREND_P)


def median_ci(x: ArrayLike, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free confidence interval of the median; (nan, nan) when n is too small."""
    a = _as_array(x)
    if len(a) < 6:  # below 6 samples no order-statistic interval reaches 95%
        return (float("nan"), float("nan"))
    test = scipy_stats().quantile_test(a, q=float(np.median(a)), p=0.5)
    ci = test.confidence_interval(confidence)
    return (float(ci.low), float(ci.high))


def outlier_mask(x: ArrayLike, z: float = OUTLIER_Z) -> NDArray[np.bool_]:
    """True where the modified z-score 0.6745 * |x - median| / MAD exceeds ``z``."""
    a = _as_array(x)
    m = mad(a)
    if m == 0:
        return np.zeros(len(a), dtype=bool)
    return np.asarray(0.6745 * np.abs(a - np.median(a)) / m > z)


def block_medians(x: ArrayLike, blocks: int = BLOCKS) -> NDArray[np.float64]:
    """Medians of ``blocks`` consecutive, equal blocks (a remainder joins the last block)."""
    a = _as_array(x)
    size = len(a) // blocks
    cut = np.split(a[: size * blocks], blocks)
    cut[-1] = np.concatenate([cut[-1], a[size * blocks :]])
    return np.array([np.median(c) for c in cut])


def drift_aware_median_ci(x: ArrayLike) -> tuple[float, float]:
    """The median's interval, widened by drift between blocks of consecutive steps.

    From ``BLOCKED_FROM`` steps on, the steps are cut into 12-30 blocks of 5+ steps; the
    order-statistic interval of the block medians, as distances below and above their median,
    is laid around the overall median, and the wider of that and the per-step interval wins.
    """
    a = _as_array(x)
    lo, hi = median_ci(a)
    blocks = min(BLOCKS, len(a) // MIN_BLOCK)
    if blocks < MIN_BLOCKS:
        return lo, hi
    m = block_medians(a, blocks)
    lo_b, hi_b = median_ci(m)
    med, med_b = float(np.median(a)), float(np.median(m))
    return min(lo, med - (med_b - lo_b)), max(hi, med + (hi_b - med_b))


def mean_ci(x: ArrayLike, blocks: int = 10) -> tuple[float, float]:
    """The mean's 95% interval from the means of ``blocks`` consecutive blocks (Student t).

    For throughput over whole epochs, where an input pipeline makes step times bursty (a
    shuffle buffer refilling, a cache filling) and the median would hide the bursts. Blocks of
    consecutive steps keep the interval honest when neighbouring steps are correlated.
    NaN bounds for fewer than 2 blocks of 2 steps.
    """
    a = _as_array(x)
    k = min(blocks, len(a) // 2)
    if k < 2:
        return float("nan"), float("nan")
    size = len(a) // k
    means = a[: size * k].reshape(k, size).mean(axis=1)
    half = float(scipy_stats().t.ppf(0.5 + CONFIDENCE / 2, k - 1) * means.std(ddof=1) / np.sqrt(k))
    mean = float(a.mean())
    return mean - half, mean + half


@dataclass(frozen=True)
class StepSummary:
    """What a set of measured (post-warm-up) step times says, in seconds."""

    n: int
    median: float
    ci_low: float
    ci_high: float
    p5: float
    p95: float
    mean: float
    cv: float
    outliers: int

    @property
    def rel_halfwidth(self) -> float:
        """Half-width of the median's interval relative to the median (0.02 = +-2%)."""
        if not np.isfinite(self.ci_low) or self.median <= 0:
            return float("inf")
        return max(self.ci_high - self.median, self.median - self.ci_low) / self.median


def summarize(times: ArrayLike) -> StepSummary:
    """Summarise measured step times (warm-up already removed)."""
    t = _as_array(times)
    if len(t) == 0:
        raise ValueError("no measured steps to summarise")
    lo, hi = drift_aware_median_ci(t)
    mean = float(np.mean(t))
    cv = float(np.std(t, ddof=1) / mean) if len(t) > 1 and mean > 0 else 0.0
    return StepSummary(
        n=len(t),
        median=float(np.median(t)),
        ci_low=lo,
        ci_high=hi,
        p5=float(np.percentile(t, 5)),
        p95=float(np.percentile(t, 95)),
        mean=mean,
        cv=cv,
        outliers=int(outlier_mask(t).sum()),
    )
