"""The records of a diagnosis (``gpuscout doctor``) and of a soak test.

Pydantic, like :mod:`gpuscout.core.records`, because they cross a process boundary (the measuring
child reports them as JSON) and are rendered by ``report`` without TensorFlow. Times are
seconds, rates samples/s, fractions 0..1.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.records import Backend, BenchConfig, MonitorSummary
from gpuscout.core.run_settings import Precision

PipelineVerdict = Literal["input-bound (highly)", "input-bound (moderately)", "device-bound"]
HIGHLY_INPUT_BOUND = 0.20  # of the step time spent waiting for input
MODERATELY_INPUT_BOUND = 0.05


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DoctorConfig(_Record):
    """What to diagnose: a built-in workload, or the user's model with optional data."""

    workload: str = "mlp"
    model: str | None = None
    data: str | None = None
    precision: Precision = "fp32"
    xla: bool = False
    batch_size: int | None = Field(default=None, gt=0)
    device: str | None = None
    seconds: float = Field(default=8.0, gt=0)  # per measurement
    steps: int | None = Field(default=None, gt=0)  # per measurement instead (tests)
    max_batch: int | None = Field(default=None, gt=0)
    dims: dict[str, int] = Field(default_factory=dict)
    seed: int = 0
    skip: list[str] = Field(default_factory=list)  # fix names not to try
    backend: Backend = "tensorflow"


class Timing(_Record):
    """One measured loop: mean seconds per step with its 95% interval, and its rate.

    The mean, not the median: an input pipeline makes steps bursty (a shuffle buffer refilling,
    a cache filling), and what a training run pays is the total time.
    """

    label: str
    mean_s: float
    ci_low_s: float | None
    ci_high_s: float | None
    median_s: float
    steps: int
    batch_size: int
    samples_per_second: float


class PipelineAnalysis(_Record):
    """Data alone, step alone, the two together, and what that says."""

    data: Timing  # producing one batch, no training
    step: Timing  # training on one batch already on the device
    together: Timing  # the two as a training loop runs them
    input_wait_fraction: float  # of the together step, waiting for input
    verdict: PipelineVerdict
    device_busy_fraction: float | None = None  # GPU: NVML utilization during "together"
    busiest_core_data: float | None = None  # CPU: the busiest core while only data ran
    explanation: str


class Fix(_Record):
    """One ablation: a change, its measured speedup over the baseline, and how to apply it."""

    name: str
    speedup: float | None  # baseline time per sample / this one's; None: not measured
    speedup_low: float | None = None  # from the two medians' 95% intervals
    speedup_high: float | None = None
    samples_per_second: float | None = None
    status: Literal["measured", "skipped", "failed"] = "measured"
    in_baseline: bool = False  # the baseline already has it: the speedup is what it gains you
    code: str
    note: str = ""


class DoctorReport(_Record):
    workload: str
    device: str
    device_name: str
    batch_size: int
    baseline: Timing
    analysis: PipelineAnalysis
    fixes: list[Fix]  # ranked by measured speedup; then those in the baseline; then the rest
    combined: Fix | None = None  # the fixes that helped, applied together
    largest_batch: int | None = None
    batch_search: list[tuple[int, bool]] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    monitor: MonitorSummary | None = None

    @property
    def verdict(self) -> PipelineVerdict:
        return self.analysis.verdict


def verdict_for(wait_fraction: float) -> PipelineVerdict:
    if wait_fraction >= HIGHLY_INPUT_BOUND:
        return "input-bound (highly)"
    if wait_fraction >= MODERATELY_INPUT_BOUND:
        return "input-bound (moderately)"
    return "device-bound"


class SoakConfig(_Record):
    workload: str = "mlp"
    model: str | None = None
    precision: Precision = "fp32"
    xla: bool = False
    batch_size: int | None = Field(default=None, gt=0)
    device: str | None = None
    minutes: float = Field(default=10.0, gt=0)
    max_drift: float = Field(default=0.10, gt=0, lt=1)
    dims: dict[str, int] = Field(default_factory=dict)
    seed: int = 0
    backend: Backend = "tensorflow"

    def bench_config(self) -> BenchConfig:
        """The same model, data and settings as a benchmark's (to build and to store it)."""
        return BenchConfig(
            workload=self.workload,
            model=self.model,
            precision=self.precision,
            xla=self.xla or self.backend == "jax",  # every JAX step is compiled by XLA
            batch_size=self.batch_size,
            device=self.device,
            dims=self.dims,
            seed=self.seed,
            backend=self.backend,
        )


class SoakReport(_Record):
    workload: str
    device: str
    device_name: str
    batch_size: int
    verdict: Literal["pass", "fail", "inconclusive", "incomplete"]
    reasons: list[str]  # why it failed, is inconclusive or incomplete; empty on a clean pass
    evidence: list[str]  # every check with its figure, passed or not
    seconds: float
    steps: int
    first_window: Timing | None = None
    last_window: Timing | None = None
    drift: float | None = None  # last window's throughput / first's - 1
    noise: float | None = None  # one window's throughput noise, relative (None: not measured)
    bad_losses: int = 0
    first_bad_step: int | None = None
    error: str | None = None  # OOM or another failure that ended the run
    interrupted: bool = False
    monitor: MonitorSummary | None = None
    step_times_s: list[float] = Field(default_factory=list)
