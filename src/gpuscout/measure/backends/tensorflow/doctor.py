"""The doctor's measurements on TensorFlow: the pipeline analysis and every ablation.

Each trial builds the model afresh (a precision policy applies when layers are built), builds
the pipeline with the trial's fixes, and times the same training loop ``bench`` times, under
the same warm-up and stopping protocol. Nothing is assumed: a fix's speedup is the ratio of
two measured medians.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras
import psutil

from gpuscout.diagnose.analysis import timing
from gpuscout.diagnose.records import DoctorConfig, Timing
from gpuscout.measure.backends.keras import user_model as keras_user
from gpuscout.measure.backends.keras.models import BUILDERS, Built
from gpuscout.measure.backends.tensorflow import data as tf_data
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.measure.backends.tensorflow import train as tf_train
from gpuscout.measure.benchmark import is_oom
from gpuscout.measure.protocol import Protocol, StopRule
from gpuscout.measure.user_spec import parse_model_spec
from gpuscout.workloads import get_workload

CPU_MEMORY_GUARD = 0.6  # on a CPU, a batch using more of the RAM than this "does not fit"


@dataclass(frozen=True)
class Trial:
    """One setup to time: the pipeline's fixes, precision, XLA, graph or eager, batch."""

    knobs: tf_data.Knobs
    precision: str
    xla: bool
    batch: int
    graph: bool = True


class Target:
    """The model and data being diagnosed, buildable in any trial's setup."""

    def __init__(self, tf: Any, config: DoctorConfig) -> None:
        self.tf, self.config = tf, config
        self.device = tf_runtime.resolve_device(tf, config.device)
        self.notes: list[str] = []
        self.spec = parse_model_spec(config.model) if config.model else None
        self.workload = None if self.spec else get_workload(config.workload)
        self.dims = self.workload.resolve(config.dims) if self.workload else {}
        if config.batch_size:
            self.batch = config.batch_size
        elif self.workload is not None:
            gpu = self.device.kind == "GPU"
            self.batch = self.workload.default_batch_gpu if gpu else self.workload.default_batch_cpu
            self.notes.append(
                f"batch size {self.batch}: gpuscout's default on a {self.device.kind}"
            )
        else:
            self.batch = 0  # read from the user's data, or 32 below
        self.name = config.model or config.workload
        # What the first pipeline built showed (read by the doctor to choose its fixes).
        self.pipeline_notes: list[str] = []
        self.has_map = False
        self.finite = True
        self.max_batch: int | None = self.dims.get("samples") if self.workload else None

    def sync(self) -> None:
        tf_runtime.sync(self.tf, self.device)

    def model(self, precision: str) -> Built:
        keras.backend.clear_session()
        gc.collect()
        keras.utils.set_random_seed(self.config.seed)
        keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
        with self.tf.device(self.device.tf_name):
            if self.workload is not None:
                return BUILDERS[self.workload.name](self.dims)
            assert self.spec is not None
            built, notes = keras_user.prepare_user_model(keras_user.load_model(self.spec))
            self.notes += [n for n in notes if n not in self.notes]
            return built

    def pipeline(self, built: Built, knobs: tf_data.Knobs, batch: int) -> tf_data.Pipeline:
        tf, cfg = self.tf, self.config
        if self.workload is not None:
            pipe = tf_data.builtin(tf, self.workload, self.dims, batch, knobs, cfg.seed)
        elif cfg.data:
            pipe = tf_data.user(tf, cfg.data, knobs, batch or None)
        else:
            pipe = tf_data.generated(tf, built, batch or 32, knobs, cfg.seed)
        if not self.batch:
            self.batch = pipe.batch_size
        if not self.pipeline_notes:
            self.pipeline_notes, self.has_map, self.finite = pipe.notes, pipe.has_map, pipe.finite
        return pipe

    def rule(self, warmup: int | None = None) -> StopRule:
        """Each measurement runs its whole time budget (or step count): an early stop on a
        tight median could end between the bursts an input pipeline makes."""
        cfg = self.config
        if cfg.steps:
            return StopRule(budget_s=None, fixed_steps=cfg.steps, fixed_warmup=warmup or 2)
        return StopRule(budget_s=cfg.seconds, min_measure_s=cfg.seconds, fixed_warmup=warmup)

    def loop(self, label: str, trial: Trial) -> Timing:
        """Data and step together, as a training loop runs them."""
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        # A cache fills during the first epoch: that epoch is warm-up, not the fix's speed.
        epoch = pipe.steps_per_epoch if trial.knobs.cache else None
        protocol = Protocol(self.rule(warmup=epoch + 2 if epoch else None))
        with self.tf.device(self.device.tf_name):
            if trial.graph:
                outcome = tf_train.custom_loop(
                    self.tf, built, pipe.dataset, trial.precision, trial.xla, protocol, self.sync
                )
            else:
                outcome = protocol.run(_eager_step(self.tf, built, iter(pipe.dataset), self.sync))
        return timing(label, outcome, pipe.batch_size)

    def data_alone(self, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        iterator = iter(pipe.dataset)
        outcome = Protocol(self.rule()).run(lambda: next(iterator))
        return timing("data alone", outcome, pipe.batch_size)

    def step_alone(self, trial: Trial) -> Timing:
        """Training on one batch already on the device, over and over: no input at all."""
        tf = self.tf
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        x, y = next(iter(pipe.dataset))
        with tf.device(self.device.tf_name):
            x, y = tf.nest.map_structure(tf.identity, (x, y))
            step = tf_train.train_step_function(tf, built, trial.precision, trial.xla)

            def one() -> None:
                step(x, y).numpy()
                self.sync()

            outcome = Protocol(self.rule()).run(one)
        return timing("step alone", outcome, pipe.batch_size)

    def fits(self, trial: Trial) -> bool:
        """Whether two training steps run at this batch size without running out of memory."""
        tf = self.tf
        try:
            built = self.model(trial.precision)
            pipe = self.pipeline(built, trial.knobs, trial.batch)
            with tf.device(self.device.tf_name):
                step = tf_train.train_step_function(tf, built, trial.precision, trial.xla)
                iterator = iter(pipe.dataset)
                for _ in range(2):
                    x, y = next(iterator)
                    step(x, y).numpy()
                    self.sync()
        except StopIteration:  # fewer samples than one batch of this size
            return False
        except Exception as exc:
            if is_oom(exc):
                return False
            raise
        if self.device.kind == "CPU":  # the kernel's OOM killer gives no second chance
            used = psutil.Process().memory_info().rss
            return bool(used < CPU_MEMORY_GUARD * psutil.virtual_memory().total)
        return True


def _eager_step(tf: Any, built: Built, iterator: Any, sync: Callable[[], None]) -> Any:
    model, loss_fn, optimizer = built.model, built.loss, built.optimizer
    optimizer.build(model.trainable_variables)

    def one() -> None:
        x, y = next(iterator)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, tf.cast(model(x, training=True), tf.float32))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        loss.numpy()
        sync()

    return one
