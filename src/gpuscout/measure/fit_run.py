"""The stored record of a ``model.fit`` timed by ``ScoutCallback``: composed without Keras.

The callback (in the Keras backend) collects the time of each training callback, the steps each
covers and the device; this module turns them into a :class:`RunResult`, so what a callback run
stores can be built, and checked, with no TensorFlow. Three rules keep the record truthful:

* the workload is the user's model, ``fit:NAME``, in the run and in its config alike, never a
  built-in workload it is not (nothing can model it: gpuscout keeps no step profile of it);
* samples/s is stored only when the batch size is known. Without it no rate is stored at all:
  the step time (median, p5, p95, mean, and every step's time) already is the per-step figure,
  in seconds as every number in a record, and an empty samples/s is what every reader (runs
  list, ranking, calibration, exports) already takes as "no throughput", so none of them can
  read steps as samples. :func:`fit_rate` gives the steps/s a summary prints;
* a step is a step, not a callback: compiled with ``steps_per_execution=k``, Keras calls back
  once per execution of up to k steps, so each time covers the steps counted for it. A step's
  time is its execution's time over its steps; the median, percentiles and interval are over
  the executions (the steps inside one are never seen apart: k copies of one time are not k
  measurements), the mean and every count are over the steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from gpuscout.core.records import (
    BACKENDS,
    FIT_PREFIX,
    BenchConfig,
    Interval,
    RunResult,
    StepTimes,
    Warmup,
)
from gpuscout.core.run_settings import PRECISIONS, Precision
from gpuscout.measure.result import per_step_rate
from gpuscout.measure.stats import detect_warmup, outlier_mask, summarize

_POLICY_NAMES = {"float32": "fp32"}  # Keras policy -> gpuscout precision, where they differ


def fit_workload(model_name: str) -> str:
    """The workload name a ScoutCallback run is stored under."""
    return f"{FIT_PREFIX}{model_name}"


def compose_fit_run(
    times: Sequence[float],
    *,
    model_name: str,
    device: str,
    device_name: str,
    policy: str,
    xla: bool,
    batch_size: int | None,
    env: Mapping[str, Any],
    backend: str = "tensorflow",
    steps: Sequence[int] | None = None,
    steps_per_execution: int = 1,
    counting: Sequence[str] = (),
) -> RunResult:
    """The run of a ``model.fit`` whose training callbacks came ``times`` seconds apart
    (warm-up included).

    ``device``: as TensorFlow names it ("GPU:0", "CPU:0"); ``device_name``: the hardware's
    name ("NVIDIA A100-SXM4-80GB"), which the catalog recognises; ``policy``: the Keras
    mixed-precision policy; ``batch_size``: samples per batch, None when not given.
    ``steps``: the training steps each time covers (1 each when not given), for a model
    compiled with ``steps_per_execution``; ``counting``: how steps were counted where Keras
    did not say (an assumption each).
    """
    counts = [1] * len(times) if steps is None else [int(n) for n in steps]
    if len(counts) != len(times) or any(n < 1 for n in counts):
        raise ValueError(f"{len(times)} times need as many step counts of 1 or more: {counts}")
    k = max(1, int(steps_per_execution))
    per_step = [t / n for t, n in zip(times, counts, strict=True)]  # one per execution
    every_step = [t for t, n in zip(per_step, counts, strict=True) for _ in range(n)]
    precision = _POLICY_NAMES.get(policy, policy)
    assumptions = [
        "timed by ScoutCallback inside model.fit: each "
        + ("execution of steps" if k > 1 else "batch")
        + " from the end of the last one, so input and callbacks are included, as the run "
        "pays for them",
        f"batch size {batch_size}, as given to ScoutCallback"
        if batch_size
        else "no batch size given to ScoutCallback: no samples/s is stored, only the step "
        "time; pass ScoutCallback(batch_size=...) for samples/s",
    ]
    if k > 1:
        assumptions.append(
            f"steps_per_execution = {k} was counted: Keras calls back once per execution of up "
            f"to {k} steps, so each time covers the steps run since the last call "
            f"({sum(counts)} steps in {len(times)} executions); a step's time is its "
            "execution's time over its steps, and the median, percentiles, interval, spread "
            "and warm-up are those of the executions' step times"
        )
    assumptions += counting
    if precision not in PRECISIONS:
        assumptions.append(
            f"the Keras policy '{policy}' is not one of gpuscout's precisions: the run says "
            f"'{policy}', its config says fp32 (the closest it can hold)"
        )
    config = BenchConfig(
        workload=fit_workload(model_name),
        loop="fit",
        precision=cast(Precision, precision if precision in PRECISIONS else "fp32"),
        xla=xla,
        batch_size=batch_size,
        device=device,
        seconds=None,  # the user's fit decides how long it runs, not gpuscout
        backend=backend if backend in BACKENDS else "tensorflow",
    )
    common: dict[str, Any] = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "workload": config.workload,
        "device": device,
        "precision": precision,
        "xla": xla,
        "loop": "fit",
        "batch_size": batch_size or 0,  # 0: not known
        "config": config,
        "backend": config.backend,
        "env": {
            **env,
            "device_name": device_name,
            "keras_backend": backend,
            "steps_per_execution": k,
        },
        "step_times_s": every_step,  # every step's time: an execution's, shared by its steps
    }
    if len(times) < 3:
        executions = f" in {len(times)} executions" if k > 1 else ""
        return RunResult(
            status="error",
            message=f"only {sum(counts)} training steps{executions}: too few to measure",
            assumptions=assumptions,
            **common,
        )
    warmup = detect_warmup(per_step)  # in executions (steps, for steps_per_execution=1)
    method = "detected"
    if warmup is None:
        warmup, method = max(1, len(times) // 10), "not found: first 10% dropped"
    s = summarize(per_step[warmup:])
    measured_steps = sum(counts[warmup:])
    mean = sum(times[warmup:]) / measured_steps  # over the steps, not the executions
    flagged = outlier_mask(per_step[warmup:])  # an execution flagged: its steps are
    outliers = sum(n for n, out in zip(counts[warmup:], flagged, strict=True) if out)
    rates: dict[str, Any] = {}
    if batch_size:
        rates = {
            "samples_per_second": per_step_rate(s, batch_size),
            "mean_samples_per_second": batch_size / mean,
        }
    return RunResult(
        status="ok",
        **rates,
        step_time_s=StepTimes(median=s.median, p5=s.p5, p95=s.p95, mean=mean),
        cv=s.cv,
        outliers=outliers,
        warmup=Warmup(steps=sum(counts[:warmup]), seconds=sum(times[:warmup]), method=method),
        measured_steps=measured_steps,
        stop_reason="fit ended",
        assumptions=assumptions,
        **common,
    )


def fit_rate(run: RunResult) -> tuple[Interval, str] | None:
    """The run's median rate with its 95% interval, and its unit: samples/s where stored,
    else steps/s from the measured step times; None for a run with no measured steps."""
    if run.samples_per_second is not None:
        return run.samples_per_second, "samples/s"
    measured = run.step_times_s[run.warmup.steps :] if run.warmup else []
    if run.status != "ok" or not measured:
        return None
    k = int(run.env.get("steps_per_execution") or 1)
    return per_step_rate(summarize(_executions(measured, k)), 1), "steps/s"


def _executions(step_times: Sequence[float], k: int) -> list[float]:
    """One step time per execution of up to ``k`` steps: the stored steps of one execution
    share its time, so a run of equal times is one execution (split every ``k``), as
    :func:`compose_fit_run` summarised them. Two executions in a row with bit-identical
    step times would be read as one: one sample fewer, of a value already there."""
    out: list[float] = []
    i = 0
    while i < len(step_times):
        j = i + 1
        while j < len(step_times) and j - i < k and step_times[j] == step_times[i]:
            j += 1
        out.append(step_times[i])
        i = j
    return out
