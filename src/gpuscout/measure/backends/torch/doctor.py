"""The doctor on PyTorch: its target, timed trial by trial, and its run in the measuring child.

Keras 3 on PyTorch has no input pipeline of its own either (its ``fit`` takes NumPy arrays, a
``PyDataset`` or a ``DataLoader``), so the data are NumPy batches made on the host, as on JAX
(:mod:`gpuscout.measure.host_data`, the fixes done in threads as a ``DataLoader``'s workers do
them in processes), and moved to the device as torch tensors. Each trial builds the model
afresh under the trial's precision policy and times bench's eager step
(:func:`~gpuscout.measure.backends.torch.step.train_step`) under the same warm-up and stopping
protocol; the run itself is ``gpuscout.diagnose.ablations``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from gpuscout.core.errors import is_oom
from gpuscout.diagnose.analysis import timing
from gpuscout.diagnose.records import DoctorConfig, Timing
from gpuscout.diagnose.trials import TargetBase, Trial, fits_in_cpu_memory
from gpuscout.measure import host_data
from gpuscout.measure.backends.torch import runtime
from gpuscout.measure.backends.torch.step import train_step
from gpuscout.measure.pipelines import Knobs, Pipeline
from gpuscout.measure.protocol import Protocol


def diagnose_here(
    payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """The child's side: measure everything on PyTorch and return the report as JSON. On a GPU
    TF32 is on for float32 matmuls, as bench's default ``--tf32`` sets it, and restored after."""
    from gpuscout.diagnose.ablations import run_ablations
    from gpuscout.diagnose.fixes import TORCH

    config = DoctorConfig.model_validate(payload)
    torch = runtime.import_torch()
    runtime.keras_on_torch()
    from gpuscout.measure.backends.keras.trial_model import keeping_policy

    target = Target(torch, config)
    before = runtime.set_tf32(torch, True) if target.device.kind == "GPU" else None
    try:
        return keeping_policy(lambda: run_ablations(target, config, TORCH, emit))
    finally:
        if before is not None:
            runtime.restore_tf32(torch, before)


class Target(TargetBase):
    """The model and data being diagnosed, on a PyTorch device."""

    def __init__(self, torch: Any, config: DoctorConfig) -> None:
        self.torch = torch
        self.device = runtime.resolve_device(torch, config.device)
        super().__init__(config, self.device.kind)
        self.notes.append(
            "PyTorch backend: Keras 3 on PyTorch, the eager step bench times; data made on the "
            "host as NumPy batches and moved to the device as torch tensors (torch.as_tensor, "
            ".to(device)), as a DataLoader's batches are"
        )
        if self.device.kind == "GPU":
            self.notes.append(
                "TF32 on for float32 matmuls and convolutions (as bench's default --tf32)"
            )

    def place(self, batch: Any) -> Any:
        import keras

        torch, where = self.torch, self.device.torch_name
        return keras.tree.map_structure(lambda a: torch.as_tensor(np.asarray(a)).to(where), batch)

    def settle(self, batch: Any) -> None:
        runtime.synchronize(self.torch, self.device)

    def model(self, precision: str) -> Any:
        import keras

        from gpuscout.measure.backends.keras.seeding import seed_keras
        from gpuscout.measure.backends.keras.trial_model import fresh_model

        def seed(value: int) -> None:
            seed_keras(keras, value)

        return fresh_model(self, precision, seed, keras.device(self.device.torch_name))

    def build_pipeline(self, built: Any, knobs: Knobs, batch: int) -> Pipeline:
        from gpuscout.measure.backends.keras.host_pipeline import host_pipeline

        return host_pipeline(self.config, self.workload, self.dims, built, knobs, batch, self.place)

    def _run(self, step: Callable[[Any, Any], Any], x: Any, y: Any) -> None:
        """One step, finished: its queued kernels done before the next is timed."""
        step(x, y)
        runtime.synchronize(self.torch, self.device)

    def _step(self, built: Any, trial: Trial) -> Callable[[Any, Any], Any]:
        with self._on_device():  # the optimizer's variables, built here, on the device
            return train_step(self.torch, built, trial.precision)

    def _on_device(self) -> Any:
        """Keras' device scope: what the step makes (dropout masks, optimizer slots) is made
        on the trial's device, as in bench's session."""
        import keras

        return keras.device(self.device.torch_name)

    def loop(self, label: str, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        step = self._step(built, trial)
        batches = iter(pipe.dataset)
        try:
            with self._on_device():
                outcome = Protocol(self.loop_rule(trial, pipe)).run(
                    lambda: self._run(step, *next(batches))
                )
        finally:
            host_data.close_iterator(batches)
        return timing(label, outcome, pipe.batch_size)

    def step_alone(self, trial: Trial) -> Timing:
        built = self.model(trial.precision)
        pipe = self.pipeline(built, trial.knobs, trial.batch)
        x, y = host_data.first_batch(pipe)
        step = self._step(built, trial)
        with self._on_device():
            outcome = Protocol(self.rule()).run(lambda: self._run(step, x, y))
        return timing("step alone", outcome, pipe.batch_size)

    def fits(self, trial: Trial) -> bool:
        batches: Iterator[Any] | None = None
        try:
            built = self.model(trial.precision)
            pipe = self.pipeline(built, trial.knobs, trial.batch)
            step = self._step(built, trial)
            batches = iter(pipe.dataset)
            with self._on_device():
                for _ in range(2):
                    self._run(step, *next(batches))
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
