"""What a finished measurement says: the result record and the warnings that tell what to do.

Free of TensorFlow: it works on the protocol's :class:`~gpuscout.measure.protocol.Outcome` and
plain numbers, so the warnings are unit-tested on planted outcomes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from gpuscout.core.records import BenchConfig, Interval, RunResult, StepTimes, Warmup
from gpuscout.measure import environment, peaks
from gpuscout.measure.loss_check import DIVERGED
from gpuscout.measure.protocol import Outcome
from gpuscout.measure.stats import TARGET_REL_CI, StepSummary
from gpuscout.workloads import Dims, Workload

CV_WARN = 0.07
MIN_STEPS_WARN = 20
OUTLIER_WARN = 0.05


@dataclass
class Prepared:
    """Everything a measurement needs, built on the device, plus what was assumed."""

    built: Any = None  # backends.keras.models.Built
    dataset: Any = None  # tf.data.Dataset
    batch_size: int = 0
    flops_per_step: float | None = None
    flops_method: str | None = None
    epoch_samples: int | None = None
    epoch_unit: str = "samples"
    workload_hash: str = ""
    assumptions: list[str] = field(default_factory=list)

    def say_flops(self, own_model: bool) -> None:
        """The FLOPs assumption, in the same words on every backend that counts them."""
        if self.flops_method:
            self.assumptions.append(
                f"FLOPs per step (2 per multiply-add): {self.flops_method}"
                if own_model
                else "FLOPs per step: training = 3 x forward (2 per multiply-add); "
                f"{self.flops_method}"
            )

    def describe_builtin(
        self, workload: Workload, dims: Dims, batch: int, config: BenchConfig, builder: Any
    ) -> None:
        """What every backend says of a built-in workload: FLOPs per step, epoch, the hash of
        its definition (its settings and its builder's source)."""
        flops = workload.training_flops_per_sample(dims)
        if flops is not None:
            self.flops_per_step = flops * batch
            self.flops_method = workload.flops_note
        self.epoch_samples = config.epoch_samples or workload.epoch_samples
        self.epoch_unit = workload.epoch_unit
        self.assumptions.append(f"epoch = {self.epoch_samples:,} {workload.epoch_unit}")
        self.workload_hash = environment.hash_parts(
            workload.name, repr(sorted(dims.items())), inspect.getsource(builder)
        )


def outcome_warnings(outcome: Outcome, target_rel_ci: float = TARGET_REL_CI) -> list[str]:
    """Warnings, each with what to do about it, for a measurement's outcome."""
    s = outcome.summary
    rel = s.rel_halfwidth
    ci_ok = np.isfinite(s.ci_low)
    out: list[str] = []
    if s.cv > CV_WARN:
        out.append(
            f"unstable: step times vary with CV {s.cv:.1%} (> {CV_WARN:.0%}). Close other "
            "programs, check for thermal or power throttling, and measure longer (--seconds)."
        )
    if rel > target_rel_ci:
        width = f"+-{rel:.1%}" if ci_ok else "undefined (too few steps)"
        if outcome.stop_reason == "steps":
            out.append(
                f"imprecise: after the fixed --steps the interval is {width}, wider than "
                f"+-{target_rel_ci:.0%}. Measure more steps, or drop --steps and let gpuscout "
                "decide."
            )
        else:
            out.append(
                f"too short: the time budget ran out with the interval at {width}, wider than "
                f"the +-{target_rel_ci:.0%} target. Raise --seconds."
            )
    if s.n < MIN_STEPS_WARN:
        out.append(
            f"too short: only {s.n} measured steps. Raise --seconds (or --steps) for at least "
            f"{MIN_STEPS_WARN}."
        )
    if outcome.warmup_method == "not found":
        out.append(
            "no steady state was detected: the first steps kept getting faster, so later ones "
            "were measured anyway. Measure longer (--seconds) or fix warm-up (--warmup-steps)."
        )
    if s.outliers > max(1, OUTLIER_WARN * s.n):
        out.append(
            f"{s.outliers} of {s.n} steps are outliers (MAD): something else competes for the "
            "device or the CPU."
        )
    return out


def per_step_rate(s: StepSummary, samples: int) -> Interval:
    """``samples`` per step: the median rate and its 95% interval (the slow bound of the step
    time is the fast bound of the rate); no bounds where the interval is unknown."""
    known = bool(np.isfinite(s.ci_low))
    return Interval(
        median=samples / s.median,
        ci_low=samples / s.ci_high if known else None,
        ci_high=samples / s.ci_low if known else None,
    )


def _mfu_above_peak(source: str) -> str:
    """The warning of a run faster than its peak: on a CPU, even after the peak was measured
    again (MFU is stored as 100 %); on a GPU, a datasheet peak that is wrong, or a missing
    synchronisation."""
    if peaks.is_estimate(source):
        return (
            f"MFU above 100% even of a peak measured again after the run: stored as 100 % "
            f"({peaks.PEAK_MEASURED_LOW}, while the machine was busy); MFU on a CPU is an "
            f"{peaks.ESTIMATE}"
        )
    return (
        "MFU above 100%: the peak is too low (a GPU missing from the table or misnamed in it) "
        "or the steps were not synchronised"
    )


def compose(
    config: BenchConfig,
    device_name: str,
    prep: Prepared,
    outcome: Outcome,
    peak: tuple[float | None, str],
    memory: tuple[int | None, str],
    warnings: list[str],
    env: dict[str, Any],
    workload_name: str,
    target_rel_ci: float = TARGET_REL_CI,
) -> RunResult:
    """The stored result of a finished measurement, with its warnings."""
    s, batch = outcome.summary, prep.batch_size
    rel = s.rel_halfwidth
    ci_ok = np.isfinite(s.ci_low)
    warnings = warnings + outcome_warnings(outcome, target_rel_ci)
    tput_med = batch / s.median
    flops_rate = prep.flops_per_step / s.median if prep.flops_per_step else None
    peak_flops, peak_source = peaks.upper_bound(peak, flops_rate)  # a CPU's: measured again
    mfu = flops_rate / peak_flops if flops_rate and peak_flops else None
    if mfu is not None and mfu > 1:
        warnings = [*warnings, _mfu_above_peak(peak_source)]
        mfu = 1.0 if peaks.is_estimate(peak_source) else mfu
    return RunResult(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        # A broken training is timed honestly, but is no benchmark: its status says so.
        status=DIVERGED if outcome.broken else "ok",
        message=outcome.broken,
        workload=workload_name,
        device=device_name,
        precision=config.precision,
        xla=config.xla,
        loop=config.loop,
        batch_size=batch,
        samples_per_second=per_step_rate(s, batch),
        mean_samples_per_second=batch / s.mean,
        step_time_s=StepTimes(median=s.median, p5=s.p5, p95=s.p95, mean=s.mean),
        ci_rel_halfwidth=rel if ci_ok else None,
        cv=s.cv,
        outliers=s.outliers,
        warmup=Warmup(
            steps=outcome.warmup_steps,
            seconds=outcome.warmup_seconds,
            method=outcome.warmup_method,
        ),
        measured_steps=s.n,
        stop_reason=outcome.stop_reason,
        flops_per_step=prep.flops_per_step,
        flops_method=prep.flops_method,
        tflops=flops_rate / 1e12 if flops_rate else None,
        peak_tflops=peak_flops / 1e12 if peak_flops else None,
        peak_source=peak_source,
        mfu=mfu,
        epoch_samples=prep.epoch_samples,
        epoch_unit=prep.epoch_unit,
        epoch_seconds=prep.epoch_samples / tput_med if prep.epoch_samples else None,
        peak_memory_bytes=memory[0],
        memory_method=memory[1],
        warnings=warnings,
        assumptions=prep.assumptions,
        config=config,
        backend=config.backend,
        env=env,
        step_times_s=list(outcome.times),
    )
