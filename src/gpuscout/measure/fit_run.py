"""The stored record of a ``model.fit`` timed by ``ScoutCallback``: composed without Keras.

The callback (in the TensorFlow backend) collects step times and the device; this module turns
them into a :class:`RunResult`, so what a callback run stores can be built, and checked, with
no TensorFlow. Two rules keep the record truthful:

* the workload is the user's model, ``fit:NAME``, in the run and in its config alike, never a
  built-in workload it is not (nothing can model it: gpuscout keeps no step profile of it);
* samples/s is stored only when the batch size is known. Without it no rate is stored at all:
  the step time (median, p5, p95, mean, and every step's time) already is the per-step figure,
  in seconds as every number in a record, and an empty samples/s is what every reader (runs
  list, ranking, calibration, exports) already takes as "no throughput", so none of them can
  read steps as samples. :func:`fit_rate` gives the steps/s a summary prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from gpuscout.measure.result import per_step_rate
from gpuscout.measure.stats import detect_warmup, summarize
from gpuscout.records import (
    BACKENDS,
    FIT_PREFIX,
    BenchConfig,
    Interval,
    RunResult,
    StepTimes,
    Warmup,
)
from gpuscout.run_settings import PRECISIONS, Precision

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
) -> RunResult:
    """The run of a ``model.fit`` whose batches took ``times`` seconds (warm-up included).

    ``device``: as TensorFlow names it ("GPU:0", "CPU:0"); ``device_name``: the hardware's
    name ("NVIDIA A100-SXM4-80GB"), which the catalog recognises; ``policy``: the Keras
    mixed-precision policy; ``batch_size``: samples per batch, None when not given.
    """
    precision = _POLICY_NAMES.get(policy, policy)
    assumptions = [
        "timed by ScoutCallback inside model.fit: each batch from the end of the last one, so "
        "input and callbacks are included, as the run pays for them",
        f"batch size {batch_size}, as given to ScoutCallback"
        if batch_size
        else "no batch size given to ScoutCallback: no samples/s is stored, only the step "
        "time; pass ScoutCallback(batch_size=...) for samples/s",
    ]
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
        "env": {**env, "device_name": device_name, "keras_backend": backend},
        "step_times_s": list(times),
    }
    if len(times) < 3:
        return RunResult(
            status="error",
            message=f"only {len(times)} training steps: too few to measure",
            assumptions=assumptions,
            **common,
        )
    warmup = detect_warmup(times)
    method = "detected"
    if warmup is None:
        warmup, method = max(1, len(times) // 10), "not found: first 10% dropped"
    s = summarize(times[warmup:])
    rates: dict[str, Any] = {}
    if batch_size:
        rates = {
            "samples_per_second": per_step_rate(s, batch_size),
            "mean_samples_per_second": batch_size / s.mean,
        }
    return RunResult(
        status="ok",
        **rates,
        step_time_s=StepTimes(median=s.median, p5=s.p5, p95=s.p95, mean=s.mean),
        cv=s.cv,
        outliers=s.outliers,
        warmup=Warmup(steps=warmup, seconds=sum(times[:warmup]), method=method),
        measured_steps=s.n,
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
    return per_step_rate(summarize(measured), 1), "steps/s"
