"""Whether an imported run agrees with itself: its figures are derived from one another when
gpuscout measures, so a run whose figures disagree was made by hand or by a bug.

``records.impossible_value`` checks each value alone (finite, positive, intervals ordered
around their median); this checks them together. Every finite value passed that check and
still a run with 1e308 samples/s at batch 256 and a 2.66 ms step was stored, and then shown as
"infx faster" by ``runs compare`` and fitted to by every prediction from its store.
"""

from __future__ import annotations

from gpuscout.core.records import RunResult

# The figures gpuscout derives are exact (samples/s is the batch over the median step time,
# to the last digit): 5 % leaves room for a hand-rounded export, and none for a wrong figure.
TOLERANCE = 0.05
# No training step, even a single kernel's, is shorter than a kernel launch (a few µs): a
# shorter median is a figure that was never measured.
MIN_STEP_S = 1e-6
# MFU above 100 % is kept (a CPU peak measured on a busy machine gave 172 %), and calibration
# leaves such a run out, naming it; twice the peak no measurement gives.
MAX_MFU = 2.0


def contradiction(run: RunResult) -> tuple[str, str] | None:
    """The first pair of the run's figures that contradict each other, as (field, what is
    wrong); None when the run is consistent. A run's samples/s is its batch over its median
    step time in every mode that trains: a fit run compiled with ``steps_per_execution`` stores
    its step time per step (an execution's time over its steps), so the same relation holds."""
    sps, step = run.samples_per_second, run.step_time_s
    if step is not None and step.median < MIN_STEP_S:
        return "step_time_s.median", (
            f"a median step of {step.median:.3g} s is shorter than any training step "
            f"(at least {MIN_STEP_S:g} s)"
        )
    if run.mode == "train" and sps is not None and step is not None and run.batch_size >= 1:
        implied = run.batch_size / step.median
        if abs(sps.median / implied - 1) > TOLERANCE:
            return "samples_per_second", (
                f"median {sps.median:.4g} samples/s contradicts batch {run.batch_size} over "
                f"the median step of {step.median:.4g} s ({implied:.4g} samples/s, "
                f"{TOLERANCE:.0%} allowed)"
            )
    kept = len(run.step_times_s)
    if kept and run.measured_steps > kept:
        return "measured_steps", (
            f"{run.measured_steps:,} measured steps, but only {kept:,} step times are kept"
        )
    if run.mfu is not None and run.mfu > MAX_MFU:
        return "mfu", (
            f"{run.mfu:.4g} is {run.mfu:.3g}x the peak: no measurement exceeds "
            f"{MAX_MFU:g}x (MFU above 1 is kept, and left out of calibration)"
        )
    if run.mfu and run.tflops and run.peak_tflops:
        implied = run.tflops / run.peak_tflops
        if abs(run.mfu / implied - 1) > TOLERANCE:
            return "mfu", (
                f"{run.mfu:.4g} contradicts tflops {run.tflops:.4g} over the peak "
                f"{run.peak_tflops:.4g} ({implied:.4g}, {TOLERANCE:.0%} allowed)"
            )
    return None
