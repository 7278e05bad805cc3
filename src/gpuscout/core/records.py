"""The records that cross stage boundaries: a benchmark's settings and its result.

Pydantic models (frozen) rather than bare dataclasses, because a result is also read back from
the database and, later, from files other people send: parsing validates it in one place.
Every number is SI (seconds, bytes, FLOP, samples/s); renderers pick human units.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

# The monitor's records, kept in their own module and re-exported here (explicitly: "as").
from gpuscout.core.device_records import DeviceEnergy as DeviceEnergy
from gpuscout.core.device_records import Energy as Energy
from gpuscout.core.device_records import GpuSummary as GpuSummary
from gpuscout.core.device_records import MonitorSummary as MonitorSummary
from gpuscout.core.record_base import _Record
from gpuscout.core.run_settings import Loop, Precision

SCHEMA_VERSION = 1

# "diverged": timed, but the training broke (a NaN/Inf loss, a loss grown by orders of
# magnitude; gpuscout.measure.loss_check): kept with its speed, and, like every status but
# "ok", left out of calibration, rankings and summaries.
Status = Literal["ok", "oom", "error", "diverged"]
# The framework a run was measured through: Keras 3 on TensorFlow (every run before the JAX
# backend, which is what a stored run without the field reads as), on JAX, or on PyTorch.
Backend = Literal["tensorflow", "jax", "torch"]
BACKENDS: tuple[Backend, ...] = ("tensorflow", "jax", "torch")
BACKEND_NAMES: dict[str, str] = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def on_backend(backend: str) -> str:
    """ " on JAX", " on PyTorch": what a run's precision is shown with off the default backend
    (TensorFlow's runs, the default, say nothing)."""
    return f" on {BACKEND_NAMES.get(backend, backend)}" if backend != "tensorflow" else ""


# The workload of a run timed by ScoutCallback inside the user's own ``model.fit``: "fit:NAME",
# NAME being the Keras model's name. Not a built-in workload, so nothing can model it.
FIT_PREFIX = "fit:"


class BenchConfig(_Record):
    """What to measure and how. ``None`` means "choose for the device" (and say so)."""

    workload: str = "mlp"  # a built-in workload's name; "fit:NAME" for a ScoutCallback run
    model: str | None = None  # FILE.py:FUNCTION or FILE.keras; overrides workload
    data: str | None = None  # FILE.py:FUNCTION returning a tf.data.Dataset
    loop: Loop = "custom"
    precision: Precision = "fp32"
    xla: bool = False
    compile: bool = False  # torch.compile (Inductor) on a plain PyTorch --model's step
    channels_last: bool = False  # a plain PyTorch --model in torch.channels_last memory format
    # TF32 tensor cores for float32 matmuls/convs (Ampere+ GPUs); True is TensorFlow's default,
    # and what a stored run from before this field read as.
    tf32: bool = True
    batch_size: int | None = Field(default=None, gt=0)
    device: str | None = None  # "CPU:0", "GPU:1"; None = first GPU, else CPU:0
    seconds: float | None = Field(default=60.0, gt=0)
    steps: int | None = Field(default=None, gt=0)
    warmup_steps: int | None = Field(default=None, ge=0)
    seed: int = 0
    dims: dict[str, int] = Field(default_factory=dict)  # workload size settings (seq_len, ...)
    epoch_samples: int | None = Field(default=None, gt=0)
    # Data parallel (see gpuscout.scale.distribute). devices: a count ("2") or names
    # ("GPU:0,GPU:1"), one replica each, MirroredStrategy. workers: host:port of every worker,
    # MultiWorkerMirroredStrategy, this process being task_index. batch_size is per replica;
    # global_batch_size, where given instead, is split evenly over the replicas.
    devices: str | None = None
    global_batch_size: int | None = Field(default=None, gt=0)
    workers: list[str] | None = None
    task_index: int | None = Field(default=None, ge=0)
    worker_timeout_s: float = Field(default=120.0, gt=0)
    # Inference (see gpuscout.measure.latency): latency at each batch size x concurrency.
    mode: Literal["train", "inference"] = "train"
    batch_sizes: list[int] | None = None
    concurrency: list[int] | None = None
    slo_ms: float | None = Field(default=None, gt=0)
    rate: float | None = Field(default=None, gt=0)  # samples/s to serve, for devices needed
    serving: Literal["function", "saved_model", "both"] = "function"
    backend: Backend = "tensorflow"


class Interval(_Record):
    """A median with its 95% interval; the bounds are None when too few steps were measured."""

    median: float
    ci_low: float | None
    ci_high: float | None


class StepTimes(_Record):
    median: float
    p5: float
    p95: float
    mean: float


class Warmup(_Record):
    steps: int
    seconds: float
    method: str


class WorkerRun(_Record):
    """One worker of a multi-worker run, as it saw the run."""

    task_index: int
    address: str
    status: Status
    message: str | None = None
    samples_per_second: float | None = None  # global samples / this worker's median step
    exited_after_s: float | None = None  # after the launch; the first failure is the cause
    env: dict[str, Any] = Field(default_factory=dict)


class Scaling(_Record):
    """Where a run sits in a ``--scaling`` sweep: efficiency against the sweep's base count."""

    sweep: str  # the sweep's id, shared by its runs
    base_replicas: int
    base_run_id: int | None
    # throughput(n) / (n / base x throughput(base)), with a 95% interval
    efficiency: Interval | None = None


class Distribution(_Record):
    """How a data-parallel run was spread: strategy, replicas, and the batch on each.

    Over several workers, also the network the run saw (``gpuscout.measure.network``): after
    the timed steps, outside their timing and the same number of times on every worker, the
    backend's own all-reduce of a float32 buffer the size of the model's gradients (capped at
    64 MiB) between the run's replicas, timed a few times; ``allreduce_busbw_gb_per_s`` is
    NCCL's bus bandwidth of its median time, 2 (n-1)/n x bytes / time over n replicas. None in
    runs stored before it was measured, and in runs over one worker.
    """

    strategy: str  # "MirroredStrategy" | "MultiWorkerMirroredStrategy"
    replicas: int
    devices: list[str]  # on each worker
    logical_devices: bool  # CPU devices split by set_logical_device_configuration
    workers: int = 1
    per_replica_batch: int
    global_batch: int
    scaling: Scaling | None = None
    worker_runs: list[WorkerRun] = Field(default_factory=list)
    # A worker that is not the chief sent its row to the chief's run (which holds it): bench
    # stores no second copy of the measurement (gpuscout.measure.worker_rows).
    row_sent: bool = False
    gradient_bytes: int | None = None  # the model's trainable variables, as its gradients
    allreduce_bytes: int | None = None  # the buffer all-reduced: the gradients', capped
    allreduce_s: float | None = None  # its median time
    allreduce_busbw_gb_per_s: float | None = None  # NCCL busbw of that median, 1e9 bytes/s


class LatencyPoint(_Record):
    """Requests of one batch size from ``concurrency`` clients at once, on one serving path.
    Latency is per request (one call of the model on a batch), from raw samples."""

    path: str  # "tf.function" or "jax.jit" (the model called in-process) or "saved_model"
    batch_size: int
    concurrency: int
    requests: int
    seconds: float
    p50_s: Interval
    p90_s: Interval
    p99_s: Interval
    p999_s: Interval | None = None  # None: too few requests for the 99.9th percentile
    samples_per_second: float
    requests_per_second: float
    meets_slo: bool | None = None  # p99's upper bound under the SLO; None without an SLO


class Inference(_Record):
    """A ``bench --mode inference`` run: the latency table and, with an SLO, the best point."""

    points: list[LatencyPoint]
    slo_s: float | None = None
    best: int | None = None  # index in points: most samples/s with p99 under the SLO
    rate: float | None = None  # samples/s the user must serve (--rate)
    devices_needed: int | None = None  # for that rate at the best point


class RunResult(_Record):
    """One benchmark run, successful or not. The JSON contract of ``bench --json``."""

    model_config = ConfigDict(frozen=True, extra="allow")  # newer writers may add fields

    schema_version: int = SCHEMA_VERSION
    id: int | None = None
    created_at: str
    status: Status
    message: str | None = None
    workload: str
    device: str
    precision: str
    xla: bool
    loop: str
    batch_size: int
    samples_per_second: Interval | None = None
    mean_samples_per_second: float | None = None
    step_time_s: StepTimes | None = None
    ci_rel_halfwidth: float | None = None
    cv: float | None = None
    outliers: int | None = None
    warmup: Warmup | None = None
    measured_steps: int = 0
    stop_reason: str | None = None
    flops_per_step: float | None = None
    flops_method: str | None = None
    tflops: float | None = None
    peak_tflops: float | None = None
    peak_source: str | None = None
    mfu: float | None = None
    epoch_samples: int | None = None
    epoch_unit: str = "samples"  # what a sample is: images, sequences, ...
    epoch_seconds: float | None = None
    peak_memory_bytes: int | None = None
    memory_method: str | None = None
    warnings: list[str] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    config: BenchConfig
    env: dict[str, Any] = Field(default_factory=dict)
    monitor: MonitorSummary | None = None
    distribution: Distribution | None = None  # data parallel runs only; batch_size is global
    note: str | None = Field(default=None, max_length=2000)  # the user's, free text
    mode: Literal["train", "inference"] = "train"
    backend: Backend = "tensorflow"  # always config.backend
    inference: Inference | None = None  # inference runs only
    energy: Energy | None = None  # None: a run stored before energy was measured, or untimed
    # The monitor's samples (columns, "t" in seconds). Stored beside the result, not in its JSON.
    monitor_timeline: dict[str, list[float | None]] = Field(default_factory=dict, exclude=True)
    # Every step's time (warm-up first), seconds. Stored beside the result, not in its JSON.
    step_times_s: list[float] = Field(default_factory=list, exclude=True)

    @property
    def replicas(self) -> int:
        """Devices the step ran on, in all (1 without a strategy)."""
        return self.distribution.replicas if self.distribution else 1

    @property
    def per_replica_batch(self) -> int:
        return self.distribution.per_replica_batch if self.distribution else self.batch_size

    def headline(self) -> dict[str, float | None]:
        """The run's figures, SI units, as every export shows them (CSV, TensorBoard, MLflow)."""
        sps = self.samples_per_second
        return {
            "samples_per_second": sps.median if sps else None,
            "samples_per_second_ci_low": sps.ci_low if sps else None,
            "samples_per_second_ci_high": sps.ci_high if sps else None,
            "step_time_median_s": self.step_time_s.median if self.step_time_s else None,
            "measured_steps": self.measured_steps,
            "mfu": self.mfu,
            "tflops": self.tflops,
            "epoch_seconds": self.epoch_seconds,
            "peak_memory_bytes": self.peak_memory_bytes,
        }

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def in_utc(timestamp: str) -> str:
    """An ISO 8601 date and time as gpuscout stores it: in UTC, with its ``+00:00``.

    Why: every stored time is UTC (``runs list`` heads its column "when (UTC)", and the
    store sorts the text); an imported ``10:00:00+05:00`` kept as written showed as 10:00 UTC
    and sorted five hours late (issue 43). A time without an offset is taken as UTC, as
    gpuscout writes none. Raises ValueError for text that is not a date and time."""
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(timestamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def impossible_value(run: RunResult) -> tuple[str, str] | None:
    """The first value no measurement can produce, as (field, what is wrong); None if none.

    For runs read from files others made (``runs import``): the models check types, this
    checks meaning. A throughput interval whose low bound is above its median, a negative
    rate or step time, a date that is not a date: each would be stored, then break every
    report over the database (an error bar of negative length) or mislead every comparison.
    Runs gpuscout measures pass by construction; this is not applied to them.
    """
    from datetime import datetime

    try:
        datetime.fromisoformat(run.created_at)
    except ValueError:
        return "created_at", f"'{run.created_at[:40]}' is not an ISO 8601 date and time"
    checks: list[tuple[str, float | int | None, str]] = [
        # A rate per sample needs a batch; a ScoutCallback run told none stores steps/s only
        # and batch 0, as a failed run does.
        ("batch_size", run.batch_size, ">=1" if run.samples_per_second else ">=0"),
        ("mean_samples_per_second", run.mean_samples_per_second, ">0"),
        ("ci_rel_halfwidth", run.ci_rel_halfwidth, ">=0"),
        ("cv", run.cv, ">=0"),
        ("outliers", run.outliers, ">=0"),
        ("measured_steps", run.measured_steps, ">=0"),
        ("flops_per_step", run.flops_per_step, ">0"),
        ("tflops", run.tflops, ">=0"),
        ("peak_tflops", run.peak_tflops, ">0"),
        ("mfu", run.mfu, ">=0"),
        ("epoch_samples", run.epoch_samples, ">=1"),
        ("epoch_seconds", run.epoch_seconds, ">0"),
        ("peak_memory_bytes", run.peak_memory_bytes, ">=0"),
    ]
    if run.warmup:
        checks += [("warmup.steps", run.warmup.steps, ">=0")]
        checks += [("warmup.seconds", run.warmup.seconds, ">=0")]
    if run.step_time_s:
        s = run.step_time_s
        checks += [(f"step_time_s.{k}", getattr(s, k), ">0") for k in ("median", "p5", "p95")]
        checks += [("step_time_s.mean", s.mean, ">0")]
    if run.distribution:
        d = run.distribution
        checks += [
            ("distribution.replicas", d.replicas, ">=1"),
            ("distribution.workers", d.workers, ">=1"),
            ("distribution.per_replica_batch", d.per_replica_batch, ">=1"),
            ("distribution.global_batch", d.global_batch, ">=1"),
        ]
    for i, point in enumerate(run.inference.points if run.inference else []):
        at = f"inference.points.{i}"
        checks += [
            (f"{at}.batch_size", point.batch_size, ">=1"),
            (f"{at}.concurrency", point.concurrency, ">=1"),
            (f"{at}.requests", point.requests, ">=0"),
            (f"{at}.seconds", point.seconds, ">=0"),
            (f"{at}.samples_per_second", point.samples_per_second, ">=0"),
            (f"{at}.requests_per_second", point.requests_per_second, ">=0"),
        ]
    for field, value, rule in checks:
        if value is None:
            continue
        bound = int(rule.lstrip(">="))
        if (value < bound) if rule.startswith(">=") else (value <= bound):
            need = "positive" if rule == ">0" else f"at least {bound}"
            return field, f"{value:g} is impossible: it must be {need}"
    if run.batch_size > 2**31 - 1:  # a tensor dimension; and the database's column is 64-bit
        digits = len(str(run.batch_size))
        return "batch_size", f"a {digits}-digit number is impossible: a batch is at most 2**31 - 1"
    for i, t in enumerate(run.step_times_s):
        if not t > 0:
            return f"step_times_s.{i}", f"{t:g} is impossible: a step takes a positive time"
    if run.step_time_s and not run.step_time_s.p5 <= run.step_time_s.median <= run.step_time_s.p95:
        return "step_time_s", "p5 <= median <= p95 does not hold"
    intervals: list[tuple[str, Interval | None]] = [("samples_per_second", run.samples_per_second)]
    if run.distribution and run.distribution.scaling:
        intervals.append(("distribution.scaling.efficiency", run.distribution.scaling.efficiency))
    for i, point in enumerate(run.inference.points if run.inference else []):
        for q in ("p50_s", "p90_s", "p99_s", "p999_s"):
            intervals.append((f"inference.points.{i}.{q}", getattr(point, q)))
    for field, interval in intervals:
        problem = _bad_interval(interval)
        if problem:
            return field, problem
    return None


def _bad_interval(interval: Interval | None) -> str | None:
    """Why an interval is impossible: a rate or time not positive, or bounds out of order."""
    if interval is None:
        return None
    low, mid, high = interval.ci_low, interval.median, interval.ci_high
    if not mid > 0:
        return f"median {mid:g} is impossible: it must be positive"
    if low is not None and not low > 0:
        return f"ci_low {low:g} is impossible: it must be positive"
    if low is not None and low > mid:
        return f"ci_low {low:g} is above the median {mid:g}"
    if high is not None and high < mid:
        return f"ci_high {high:g} is below the median {mid:g}"
    return None
