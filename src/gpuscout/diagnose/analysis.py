"""What the doctor's measurements say: the input-pipeline verdict and the fixes' speedups.

Pure arithmetic on :class:`~gpuscout.diagnose.records.Timing` records, free of TensorFlow, so
that every verdict and ranking is unit-tested on planted timings. The measuring lives in
``measure/backends/tensorflow/doctor``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuscout.core.units import fmt_seconds
from gpuscout.diagnose.records import Fix, PipelineAnalysis, Timing, verdict_for
from gpuscout.measure.protocol import Outcome
from gpuscout.measure.stats import mean_ci, summarize


def timing(label: str, outcome: Outcome, batch: int) -> Timing:
    return timing_of(label, outcome.measured_times, batch)


def timing_of(label: str, times: Sequence[float], batch: int) -> Timing:
    """Mean time per step with its interval (None when too few steps), median and rate.

    The interval's lower end is never below the fastest step measured: with few steps, one
    slow step (a busy machine) sends a Student-t interval below zero. That interval was
    reported as none at all, as if too few steps had run (found by CI: the doctor's cache fix
    lost its range, 1 run in about 100); the floor keeps it, wide and honest.
    """
    s = summarize(times)
    low, high = mean_ci(times)
    known = math.isfinite(low) and math.isfinite(high)  # else too few steps
    low = max(low, min(times)) if known else low
    return Timing(
        label=label,
        mean_s=s.mean,
        ci_low_s=low if known else None,
        ci_high_s=high if known else None,
        median_s=s.median,
        steps=s.n,
        batch_size=batch,
        samples_per_second=batch / s.mean,
    )


def analyse(data: Timing, step: Timing, together: Timing) -> PipelineAnalysis:
    """Data alone, step alone and both together -> the fraction of a step spent waiting.

    Waiting = what the loop takes beyond the step on device-resident data. Noise can put the
    loop a hair under the bare step; that is no waiting, not negative waiting.
    """
    wait = max(0.0, 1.0 - step.mean_s / together.mean_s)
    verdict = verdict_for(wait)
    overlap = max(data.mean_s, step.mean_s)
    text = (
        f"producing a batch takes {fmt_seconds(data.mean_s)} and training on it "
        f"{fmt_seconds(step.mean_s)}; as a loop a step takes {fmt_seconds(together.mean_s)}, "
        f"{wait:.0%} of it waiting for input. "
    )
    if verdict == "device-bound":
        text += "The device is the limit: speed up the step (precision, XLA, batch size)."
    elif data.mean_s > step.mean_s:
        text += (
            f"Even overlapped perfectly (prefetch) a step would take {fmt_seconds(overlap)}: "
            "the pipeline itself must get faster (cache, parallel map, less Python per sample)."
        )
    else:
        text += (
            "The pipeline is fast enough on its own but not overlapped with the step: "
            "prefetch lets the next batch be prepared while the device trains on this one."
        )
    return PipelineAnalysis(
        data=data,
        step=step,
        together=together,
        input_wait_fraction=wait,
        verdict=verdict,
        explanation=text,
    )


def per_sample(t: Timing) -> tuple[float, float | None, float | None]:
    b = t.batch_size
    return (
        t.mean_s / b,
        t.ci_low_s / b if t.ci_low_s is not None else None,
        t.ci_high_s / b if t.ci_high_s is not None else None,
    )


def measured_fix(
    name: str, baseline: Timing, trial: Timing, code: str, note: str = "", in_baseline: bool = False
) -> Fix:
    """The fix's speedup: the baseline's time per sample over the trial's, with a range from
    the two means' 95% intervals. ``in_baseline``: the trial is the setup *without* the fix
    (the baseline already has it), so the ratio is inverted."""
    base, trial_ = (trial, baseline) if in_baseline else (baseline, trial)
    b, b_lo, b_hi = per_sample(base)
    t, t_lo, t_hi = per_sample(trial_)
    known = None not in (b_lo, b_hi, t_lo, t_hi)
    return Fix(
        name=name,
        speedup=b / t,
        speedup_low=b_lo / t_hi if known else None,  # type: ignore[operator]
        speedup_high=b_hi / t_lo if known else None,  # type: ignore[operator]
        samples_per_second=trial.samples_per_second,
        in_baseline=in_baseline,
        code=code,
        note=note,
    )


def skipped(name: str, code: str, why: str) -> Fix:
    return Fix(name=name, speedup=None, status="skipped", code=code, note=why)


def rank(fixes: Sequence[Fix]) -> list[Fix]:
    """Fixes to apply, by measured speedup, best first; then those the baseline already has
    (what they are worth); then failed and skipped ones, as given."""

    def by_speedup(chosen: list[Fix]) -> list[Fix]:
        return sorted(chosen, key=lambda f: f.speedup or 0.0, reverse=True)

    measured = [f for f in fixes if f.speedup is not None]
    return (
        by_speedup([f for f in measured if not f.in_baseline])
        + by_speedup([f for f in measured if f.in_baseline])
        + [f for f in fixes if f.speedup is None]
    )


def helped(fix: Fix, threshold: float = 1.03) -> bool:
    """A fix worth applying: measurably faster (its interval above 1 where known)."""
    if fix.speedup is None or fix.speedup < threshold:
        return False
    return fix.speedup_low is None or fix.speedup_low > 1.0
