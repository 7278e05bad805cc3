"""The doctor's measurements on TensorFlow: its target, timed trial by trial.

Each trial builds the model afresh (a precision policy applies when layers are built), builds
the tf.data pipeline with the trial's fixes, and times the same training loop ``bench`` times,
under the same warm-up and stopping protocol (the run itself: ``diagnose/ablations.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras

from gpuscout.core.errors import is_oom
from gpuscout.diagnose.analysis import timing
from gpuscout.diagnose.records import DoctorConfig, Timing
from gpuscout.diagnose.trials import TargetBase, Trial, fits_in_cpu_memory
from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.backends.keras.trial_model import fresh_model
from gpuscout.measure.backends.tensorflow import data as tf_data
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.measure.backends.tensorflow import train as tf_train
from gpuscout.measure.pipelines import Knobs, Pipeline
from gpuscout.measure.protocol import Protocol

__all__ = ["Target", "Trial"]


class Target(TargetBase):
    """The model and data being diagnosed, on TensorFlow."""

    def __init__(self, tf: Any, config: DoctorConfig) -> None:
        self.tf = tf
        self.device = tf_runtime.resolve_device(tf, config.device)
        super().__init__(config, self.device.kind)

    def sync(self) -> None:
        tf_runtime.sync(self.tf, self.device)

    def model(self, precision: str) -> Built:
        return fresh_model(
            self, precision, keras.utils.set_random_seed, self.tf.device(self.device.tf_name)
        )

    def build_pipeline(self, built: Built, knobs: Knobs, batch: int) -> Pipeline:
        tf, cfg = self.tf, self.config
        if self.workload is not None:
            return tf_data.builtin(tf, self.workload, self.dims, batch, knobs, cfg.seed)
        if cfg.data:
            return tf_data.user(tf, cfg.data, knobs, batch or None)
        return tf_data.generated(tf, built, batch or 32, knobs, cfg.seed)

    def loop(self, label: str, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        protocol = Protocol(self.loop_rule(trial, pipe))
        with self.tf.device(self.device.tf_name):
            if trial.graph:
                outcome = tf_train.custom_loop(
                    self.tf, built, pipe.dataset, trial.precision, trial.xla, protocol, self.sync
                )
            else:
                outcome = protocol.run(_eager_step(self.tf, built, iter(pipe.dataset), self.sync))
        return timing(label, outcome, pipe.batch_size)

    def step_alone(self, trial: Trial) -> Timing:
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
        return self.device.kind != "CPU" or fits_in_cpu_memory()


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
