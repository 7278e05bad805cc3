"""What the doctor diagnoses, for every backend: the setups it times (:class:`Trial`) and the
part of a target (the model and data under diagnosis) that does not depend on the framework.

A backend subclasses :class:`TargetBase` with how to build its model and pipeline and how to
time its loop, its bare step and two steps at a batch (``measure/backends/<name>/doctor.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuscout.diagnose.analysis import timing
from gpuscout.diagnose.records import DoctorConfig, Timing
from gpuscout.measure.host_data import close_iterator
from gpuscout.measure.pipelines import Knobs, Pipeline
from gpuscout.measure.protocol import Protocol, StopRule
from gpuscout.measure.user_spec import parse_model_spec
from gpuscout.workloads import get_workload

CPU_MEMORY_GUARD = 0.6  # on a CPU, a batch using more of the RAM than this "does not fit"


@dataclass(frozen=True)
class Trial:
    """One setup to time: the pipeline's fixes, precision, XLA, compiled or eager, batch."""

    knobs: Knobs
    precision: str
    xla: bool
    batch: int
    graph: bool = True  # the step compiled (tf.function, jax.jit); False: eager


class TargetBase:
    """The model and data being diagnosed, buildable in any trial's setup: the backend-neutral
    part (batch size, what the first pipeline showed, the stopping rule, data alone)."""

    device: Any  # the backend's resolved device: name, kind, description, compute_capability

    def __init__(self, config: DoctorConfig, device_kind: str) -> None:
        self.config = config
        self.notes: list[str] = []
        self.spec = parse_model_spec(config.model) if config.model else None
        self.workload = None if self.spec else get_workload(config.workload)
        self.dims = self.workload.resolve(config.dims) if self.workload else {}
        if config.batch_size:
            self.batch = config.batch_size
        elif self.workload is not None:
            gpu = device_kind == "GPU"
            self.batch = self.workload.default_batch_gpu if gpu else self.workload.default_batch_cpu
            self.notes.append(f"batch size {self.batch}: gpuscout's default on a {device_kind}")
        else:
            self.batch = 0  # read from the user's data, or 32
        self.name = config.model or config.workload
        # What the first pipeline built showed (read by the doctor to choose its fixes).
        self.pipeline_notes: list[str] = []
        self.last_notes: list[str] = []  # the latest pipeline's: how a trial's fix was applied
        self.has_map = False
        self.no_cache: str | None = None
        self.no_parallel: str | None = None
        self.max_batch: int | None = self.dims.get("samples") if self.workload else None

    def model(self, precision: str) -> Any:
        raise NotImplementedError

    def build_pipeline(self, built: Any, knobs: Knobs, batch: int) -> Pipeline:
        raise NotImplementedError

    def loop(self, label: str, trial: Trial) -> Timing:
        """Data and step together, as a training loop runs them."""
        raise NotImplementedError

    def step_alone(self, trial: Trial) -> Timing:
        """Training on one batch already on the device, over and over: no input at all."""
        raise NotImplementedError

    def fits(self, trial: Trial) -> bool:
        """Whether two training steps run at this batch size without running out of memory."""
        raise NotImplementedError

    def settle(self, batch: Any) -> None:
        """Wait until a batch the pipeline made is ready (JAX places it asynchronously)."""

    def pipeline(self, built: Any, knobs: Knobs, batch: int) -> Pipeline:
        pipe = self.build_pipeline(built, knobs, batch)
        self.last_notes = pipe.notes
        if not self.batch:
            self.batch = pipe.batch_size
        if not self.pipeline_notes:
            self.pipeline_notes, self.has_map = pipe.notes, pipe.has_map
            self.no_cache, self.no_parallel = pipe.no_cache, pipe.no_parallel
        return pipe

    def rule(self, warmup: int | None = None) -> StopRule:
        """Each measurement runs its whole time budget (or step count): an early stop on a
        tight median could end between the bursts an input pipeline makes."""
        cfg = self.config
        if cfg.steps:
            return StopRule(budget_s=None, fixed_steps=cfg.steps, fixed_warmup=warmup or 2)
        return StopRule(budget_s=cfg.seconds, min_measure_s=cfg.seconds, fixed_warmup=warmup)

    def loop_rule(self, trial: Trial, pipe: Pipeline) -> StopRule:
        """A cache fills during the first epoch: that epoch is warm-up, not the fix's speed."""
        epoch = pipe.steps_per_epoch if trial.knobs.cache else None
        return self.rule(warmup=epoch + 2 if epoch else None)

    def data_alone(self, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        iterator = iter(pipe.dataset)
        try:
            outcome = Protocol(self.rule()).run(lambda: self.settle(next(iterator)))
        finally:
            close_iterator(iterator)
        return timing("data alone", outcome, pipe.batch_size)


def fits_in_cpu_memory() -> bool:
    """On a CPU, whether the process stays under :data:`CPU_MEMORY_GUARD` of the RAM: the
    kernel's OOM killer gives no second chance, so a batch that uses more "does not fit"."""
    import psutil

    used = psutil.Process().memory_info().rss
    return bool(used < CPU_MEMORY_GUARD * psutil.virtual_memory().total)
