"""The PyTorch measuring backend: a built-in workload's (or the user's) Keras model trained on
Keras 3's PyTorch backend by an eager step, or by Keras' ``model.fit``, timed by the same
protocol as the TensorFlow and JAX backends.

Called only through :func:`gpuscout.measure.benchmark.bench`, which checks the settings first
(what this backend cannot do yet is refused there, by name) and turns failures into stored
results.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, RunResult
from gpuscout.measure import environment
from gpuscout.measure.backends.keras.seeding import seed_keras
from gpuscout.measure.backends.keras.weights import checked
from gpuscout.measure.backends.torch import runtime
from gpuscout.measure.backends.torch.before_clock import before_the_clock
from gpuscout.measure.backends.torch.runtime import Device
from gpuscout.measure.backends.torch.step import count_flops, train_step
from gpuscout.measure.job import Job
from gpuscout.measure.protocol import BUILDING, Outcome, Protocol
from gpuscout.measure.result import Prepared, compose
from gpuscout.measure.synthetic import arrays
from gpuscout.measure.user_spec import ModelSpec, is_torch_module_file
from gpuscout.scale import distribute
from gpuscout.workloads import Workload

MODEL_BATCH = {"GPU": 256, "CPU": 32}  # as the other backends' for a user's model


@contextmanager
def session(config: BenchConfig, device: Device) -> Iterator[Any]:
    """Keras on PyTorch, on ``device``, under ``config``'s precision policy and (on a GPU) TF32
    setting; both are restored afterwards, so a program that calls gpuscout keeps its own."""
    torch = runtime.import_torch()
    keras = runtime.keras_on_torch()
    previous_policy = keras.mixed_precision.global_policy()
    previous_tf32 = runtime.set_tf32(torch, config.tf32) if device.kind == "GPU" else None
    try:
        seed_keras(keras, config.seed)
        keras.mixed_precision.set_global_policy(
            "float32" if config.precision == "fp32" else config.precision
        )
        with keras.device(device.torch_name):
            yield keras
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
        if previous_tf32 is not None:
            runtime.restore_tf32(torch, previous_tf32)


def run(job: Job) -> RunResult:
    """Measure ``job.config`` on a PyTorch device; raises on failure (the caller stores it).
    A plain PyTorch ``--model`` (a ``torch.nn.Module``) is measured without Keras."""
    if job.model_spec is not None and is_torch_module_file(job.model_spec):
        from gpuscout.measure.backends.torch import module_bench

        return module_bench.run(job)
    config = job.config
    plan = distribute.plan(config)
    if plan.workers:  # --workers/--cluster: DDP, one process per worker (torch/workers.py)
        from gpuscout.measure.backends.torch import workers

        return workers.run(job, plan)
    job.on_phase("starting PyTorch")
    torch = runtime.import_torch()
    device = runtime.resolve_device(torch, config.device)
    with session(config, device):
        return _measure(torch, job, device)


def default_batch(config: BenchConfig, workload: Workload | None, device: Device) -> int:
    """The batch a run trains at: ``--batch-size``, else the workload's default on this kind
    of device (a user's model: every backend's ``MODEL_BATCH``); DDP's workers split it too."""
    if config.batch_size:
        return config.batch_size
    if workload is None:
        return MODEL_BATCH[device.kind]
    return workload.default_batch_gpu if device.kind == "GPU" else workload.default_batch_cpu


def _on_device(torch: Any, keras: Any, data: Any, device: Device) -> Any:
    """NumPy arrays (or tuples of them) as torch tensors on ``device``, placed once."""
    return keras.tree.map_structure(
        lambda a: torch.as_tensor(np.asarray(a)).to(device.torch_name), data
    )


def prepare(
    torch: Any, config: BenchConfig, workload: Workload | None, spec: ModelSpec | None,
    device: Device,
) -> tuple[Prepared, Any, Any]:  # fmt: skip
    """The model built on ``device`` (under the policy :func:`session` set), one synthetic
    batch placed there, and what was assumed; a user's model's FLOPs are counted later, from
    its step (:func:`count_flops`)."""
    import keras

    prep = Prepared()
    batch = default_batch(config, workload, device)
    if not config.batch_size:
        prep.assumptions.append(
            f"batch size {batch}: gpuscout's default on a {device.kind} (article 001 uses 256 "
            "on a GPU); set it with --batch-size"
        )
    prep.batch_size = batch
    if spec is not None:
        from gpuscout.measure.backends.keras import user_model as keras_user

        prep.built, notes = keras_user.prepare_user_model(keras_user.load_model(spec))
        prep.assumptions += notes
        inputs, y, notes = keras_user.synthetic_user_batch(
            prep.built.model, prep.built.loss, batch, np.random.default_rng(config.seed)
        )
        prep.assumptions += notes
        x: Any = inputs[0] if len(inputs) == 1 else tuple(inputs)
        prep.epoch_samples = config.epoch_samples
        prep.workload_hash = environment.hash_parts(spec.path.read_bytes(), config.model or "")
    else:
        assert workload is not None
        from gpuscout.measure.backends.keras.models import BUILDERS

        dims = workload.resolve(config.dims)
        builder = BUILDERS[workload.name]
        prep.built = builder(dims)
        if prep.built.checkpointing:
            raise UserError(
                f"--backend torch does not take {workload.name} with gradient checkpointing "
                "yet: its step keeps every activation.",
                "drop --checkpointing, or use --backend jax.",
            )
        x, y = arrays(workload, dims, batch, config.seed)
        prep.describe_builtin(workload, dims, batch, config, builder)
    x, y = _on_device(torch, keras, (x, y), device)
    prep.assumptions.append(
        "synthetic data: one random batch placed on the device once and fed to every step, so "
        "the device is measured, not an input pipeline"
    )
    return prep, x, y


def _measure(torch: Any, job: Job, device: Device) -> RunResult:
    import keras

    config = job.config
    job.on_phase(BUILDING)
    prep, x, y = prepare(torch, config, job.workload, job.model_spec, device)
    step = train_step(torch, prep.built, config.precision)
    if job.model_spec is not None:  # counted on one step, before the clock starts
        prep.flops_per_step = count_flops(torch, step, x, y) or None
        if prep.flops_per_step:
            prep.flops_method = (
                "counted by torch.utils.flop_counter.FlopCounterMode on one training step "
                "(matmuls, convolutions and attention)"
            )
    prep.assumptions.append(
        "PyTorch backend: Keras 3 on PyTorch, eager (no torch.compile: --compile takes a plain "
        "PyTorch --model); "
        + (
            "Keras' model.fit, timed per batch by a callback"
            if config.loop == "fit"
            else "the step is the model's forward pass, loss.backward() and the optimizer's apply"
        )
        + "; each step waits for its results"
        + (" (torch.cuda.synchronize)" if device.kind == "GPU" else "")
    )
    peak, rule, tf32 = before_the_clock(torch, job, device, prep)
    protocol = Protocol(rule, job.on_progress)
    env = {
        **environment.base_environment(),
        **runtime.torch_environment(torch, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": False,
        "tf32_enabled": tf32,
        "workload_hash": prep.workload_hash,
    }
    if config.loop == "fit":
        outcome = _fit(torch, config, prep, x, y, device, protocol)
    else:
        outcome = _loop(torch, step, x, y, device, protocol)
    outcome = checked(outcome, prep.built.model.weights)
    name = config.model if job.model_spec is not None and config.model else config.workload
    return compose(
        config, device.name, prep, outcome, peak, runtime.peak_memory(torch, device), [], env,
        name,
    )  # fmt: skip


def _loop(torch: Any, step: Any, x: Any, y: Any, device: Device, protocol: Protocol) -> Outcome:
    """gpuscout's own loop: the eager step on the one placed batch, synchronised each step."""

    def one_step() -> Any:
        loss = step(x, y)
        runtime.synchronize(torch, device)
        return loss  # done: the protocol reads it to the host after the step's time is taken

    return protocol.run(one_step, returns_loss=True)


def _fit(
    torch: Any, config: BenchConfig, prep: Prepared, x: Any, y: Any, device: Device,
    protocol: Protocol,
) -> Outcome:  # fmt: skip
    """Keras' ``model.fit`` on PyTorch, fed the one placed batch for ever."""
    from gpuscout.measure.backends.keras.fit import fit_loop

    def batches() -> Iterator[tuple[Any, Any]]:
        while True:
            yield x, y

    return fit_loop(
        prep.built, batches(), config.precision, False, protocol,
        lambda: runtime.synchronize(torch, device),
    )  # fmt: skip
