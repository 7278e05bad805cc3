"""The doctor on JAX: its target, timed trial by trial, and its run in the measuring child.

JAX has no input pipeline of its own, so the data are NumPy batches made on the host
(:mod:`gpuscout.measure.host_data`, the fixes done as a JAX loop does them) and placed on the
device with ``jax.device_put``. Each trial builds the model afresh under the trial's precision
policy and times bench's stateless jitted step (``step.train_step``; run eagerly for the
``jax.jit`` fix) under the same warm-up and stopping protocol; the run itself is
``gpuscout.diagnose.ablations``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gpuscout.core.errors import is_oom
from gpuscout.diagnose.analysis import timing
from gpuscout.diagnose.records import DoctorConfig, Timing
from gpuscout.diagnose.trials import TargetBase, Trial, fits_in_cpu_memory
from gpuscout.measure import host_data
from gpuscout.measure.backends.jax import runtime as jax_runtime
from gpuscout.measure.backends.jax.backend import checked_device
from gpuscout.measure.backends.jax.step import train_step
from gpuscout.measure.backends.keras.trial_model import fresh_model
from gpuscout.measure.pipelines import Knobs, Pipeline
from gpuscout.measure.protocol import Protocol


def diagnose_here(
    payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """The child's side: measure everything on JAX and return the report as JSON."""
    from gpuscout.diagnose.ablations import run_ablations
    from gpuscout.diagnose.fixes import JAX

    config = DoctorConfig.model_validate(payload)
    jax = jax_runtime.import_jax()
    jax_runtime.keras_on_jax()
    from gpuscout.measure.backends.keras.trial_model import keeping_policy

    return keeping_policy(lambda: run_ablations(Target(jax, config), config, JAX, emit))


class Target(TargetBase):
    """The model and data being diagnosed, on a JAX device."""

    def __init__(self, jax: Any, config: DoctorConfig) -> None:
        self.jax = jax
        device = jax_runtime.resolve_device(jax, config.device)
        self.device = checked_device(device, config.precision)
        super().__init__(config, self.device.kind)
        self.notes.append(
            "JAX backend: Keras 3 on JAX; data made on the host as NumPy batches and placed on "
            "the device with jax.device_put (JAX has no input pipeline of its own)"
        )

    def place(self, batch: Any) -> Any:
        return self.jax.device_put(batch, self.device.handle)

    def settle(self, batch: Any) -> None:
        self.jax.block_until_ready(batch)

    def model(self, precision: str) -> Any:
        import keras

        def seed(value: int) -> None:
            jax_runtime.seed_keras(keras, value)

        return fresh_model(self, precision, seed, self.jax.default_device(self.device.handle))

    def build_pipeline(self, built: Any, knobs: Knobs, batch: int) -> Pipeline:
        from gpuscout.measure.backends.keras.host_pipeline import host_pipeline

        return host_pipeline(self.config, self.workload, self.dims, built, knobs, batch, self.place)

    def loop(self, label: str, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        step, state = self._step(built, trial)
        batches = iter(pipe.dataset)
        box = [state]

        def one() -> None:
            x, y = next(batches)
            box[0], loss = step(box[0], x, y)
            self.jax.block_until_ready((box[0], loss))

        try:
            with self.jax.default_device(self.device.handle):
                outcome = Protocol(self.loop_rule(trial, pipe)).run(one)
        finally:
            host_data.close_iterator(batches)
        return timing(label, outcome, pipe.batch_size)

    def step_alone(self, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        batches = iter(pipe.dataset)
        x, y = next(batches)
        host_data.close_iterator(batches)
        step, state = self._step(built, trial)
        box = [state]

        def one() -> None:
            box[0], loss = step(box[0], x, y)
            self.jax.block_until_ready((box[0], loss))

        with self.jax.default_device(self.device.handle):
            outcome = Protocol(self.rule()).run(one)
        return timing("step alone", outcome, pipe.batch_size)

    def fits(self, trial: Trial) -> bool:
        batches: Iterator[Any] | None = None
        try:
            built = self.model(trial.precision)
            pipe = self.pipeline(built, trial.knobs, trial.batch)
            step, state = self._step(built, trial)
            batches = iter(pipe.dataset)
            with self.jax.default_device(self.device.handle):
                for _ in range(2):
                    x, y = next(batches)
                    state, loss = step(state, x, y)
                    self.jax.block_until_ready((state, loss))
        except (StopIteration, host_data.TooFewSamples):  # fewer samples than one batch
            return False
        except Exception as exc:
            if is_oom(exc):
                return False
            raise
        finally:
            if batches is not None:
                host_data.close_iterator(batches)
        return self.device.kind != "CPU" or fits_in_cpu_memory()

    def _step(self, built: Any, trial: Trial) -> tuple[Any, Any]:
        with self.jax.default_device(self.device.handle):
            return train_step(self.jax, built, trial.precision, jit=trial.graph)
