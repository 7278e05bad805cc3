"""The JAX measuring backend: a built-in workload's (or the user's) Keras model trained by a
stateless step under ``jax.jit``, or by Keras' ``model.fit`` on JAX, or served
(``--mode inference``), timed by the same protocol as the TensorFlow backend.

Called only through :func:`gpuscout.measure.benchmark.bench` (and the soak job), which check the
settings first (what JAX cannot do is refused there, by name) and turn failures into stored
results.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, RunResult, WorkerRun
from gpuscout.core.run_settings import tf32_run_note
from gpuscout.measure import environment, host_data, peaks, user_code
from gpuscout.measure.backends.jax import runtime as jax_runtime
from gpuscout.measure.backends.jax import sharding
from gpuscout.measure.backends.jax import workers as jax_workers
from gpuscout.measure.backends.jax.sharding import Replicas
from gpuscout.measure.backends.jax.step import train_step
from gpuscout.measure.backends.keras.weights import checked
from gpuscout.measure.job import Job
from gpuscout.measure.pipelines import Knobs
from gpuscout.measure.protocol import BUILDING, INTERVAL_ASSUMPTION, Outcome, Protocol, StopRule
from gpuscout.measure.result import Prepared, compose
from gpuscout.measure.synthetic import arrays
from gpuscout.measure.user_spec import ModelSpec, parse_function_spec
from gpuscout.scale import distribute
from gpuscout.workloads import Workload

MODEL_BATCH = {"GPU": 256, "CPU": 32}  # as the TensorFlow backend's for a user's model


@contextmanager
def session(config: BenchConfig) -> Iterator[Any]:
    """JAX, with Keras on it, under ``config``'s precision policy and TF32 setting; both are
    restored afterwards, so a user's program that calls gpuscout keeps its own."""
    jax = jax_runtime.import_jax()
    keras = jax_runtime.keras_on_jax()
    previous_policy = keras.mixed_precision.global_policy()
    previous_tf32 = jax_runtime.set_tf32(jax, config.tf32)
    try:
        jax_runtime.seed_keras(keras, config.seed)
        keras.mixed_precision.set_global_policy(
            "float32" if config.precision == "fp32" else config.precision
        )
        yield jax
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
        jax.config.update("jax_default_matmul_precision", previous_tf32)


def run(job: Job) -> RunResult:
    """Measure ``job.config`` on a JAX device; raises on failure (the caller stores it)."""
    config = job.config
    job.on_phase("starting JAX")
    layout = distribute.plan(config)
    if layout.workers:  # before anything else runs in JAX: its devices are fixed then
        jax_workers.join(jax_runtime.import_jax(), layout, config.worker_timeout_s, job.on_phase)
    with session(config) as jax:
        device = device_for(jax, config)
        if config.mode == "inference":
            from gpuscout.measure.backends.jax.serve import run_inference

            return run_inference(jax, config, job.workload, job.model_spec, device, job.on_phase)
        return _measure(jax, job, device)


def device_for(jax: Any, config: BenchConfig) -> jax_runtime.Device:
    """The device asked for; float16 on a CPU is refused (XLA's CPU backend cannot do it)."""
    return checked_device(jax_runtime.resolve_device(jax, config.device), config.precision)


def checked_device(device: jax_runtime.Device, precision: str) -> jax_runtime.Device:
    """``device``, unless it cannot run ``precision`` (float16 on a CPU): UserError."""
    if device.kind == "CPU" and precision == "mixed_float16":
        raise UserError(
            "--precision mixed_float16 on JAX needs a GPU: XLA's CPU backend has no float16 "
            "matmul with float32 accumulation.",
            "use --precision mixed_bfloat16 or fp32 on a CPU, or --backend tensorflow.",
        )
    return device


@dataclass
class Trainable:
    """A built step on the device: the jitted step, its state, one batch placed there, and
    the input pipeline that feeds the steps instead of that batch, if the run has one."""

    prep: Prepared
    step: Any
    state: Any
    x: Any
    y: Any
    batches: Any = None  # re-iterable placed batches (host_data), or None: (x, y) repeated


def prepare(
    jax: Any, config: BenchConfig, workload: Workload | None, model_spec: ModelSpec | None,
    device: jax_runtime.Device, replicas: Replicas | None = None,
) -> Trainable:  # fmt: skip
    """Build the model, its step and its data on ``device`` (or split over ``replicas``, with
    global batches), with what was assumed (under the policy :func:`session` set): one
    synthetic batch, or the input-bound demo's pipeline, or the user's ``--data``."""
    prep = Prepared()
    batch = config.batch_size or (
        MODEL_BATCH[device.kind] if model_spec is not None
        else (workload.default_batch_gpu if device.kind == "GPU" else workload.default_batch_cpu)
        if workload is not None else 32
    )  # fmt: skip
    if not config.batch_size and not config.data and not config.global_batch_size:
        prep.assumptions.append(
            f"batch size {batch}{' per replica' if replicas else ''}: gpuscout's default on a "
            f"{device.kind} (article 001 uses 256 on a GPU); set it with --batch-size"
        )
    if replicas is not None:
        per, batch = distribute.batches(config, replicas.replicas, batch)
        prep.assumptions += replicas.notes(per, batch)
    prep.batch_size = batch
    many = replicas is not None and replicas.replicas > 1

    def place(b: Any) -> Any:
        return replicas.place(jax, b) if replicas else jax.device_put(b, device.handle)

    pipe = None
    with jax.default_device(device.handle):
        if model_spec is not None:
            x, y, pipe = _prepare_user(jax, config, model_spec, batch, prep, place)
        else:
            assert workload is not None
            from gpuscout.measure.backends.keras.models import BUILDERS

            dims = workload.resolve(config.dims)
            builder = BUILDERS[workload.name]
            prep.built = builder(dims)
            if workload.has_pipeline:  # its own (slow) input pipeline is the point of it
                pipe = host_data.builtin(workload, dims, batch, Knobs(), config.seed, place)
                prep.assumptions += pipe.notes
            x, y = arrays(workload, dims, batch, config.seed)
            prep.describe_builtin(workload, dims, batch, config, builder)
        step, state = train_step(jax, prep.built, config.precision, replicas=replicas)
        if many and (note := sharding.batch_norm_note(prep.built.model)):
            prep.assumptions.append(note)
        x, y = place((x, y))
    prep.assumptions.append(
        "data: each batch made on the host and placed on the device by the step's thread "
        "(jax.device_put, no prefetch): the input pipeline is part of what is measured"
        if pipe is not None
        else f"synthetic data: one random batch placed on the device{'s' * many} "
        "once and fed to every step, so the device is measured, not an input pipeline"
    )
    return Trainable(prep, step, state, x, y, pipe.dataset if pipe is not None else None)


def _prepare_user(
    jax: Any, config: BenchConfig, spec: ModelSpec, batch: int, prep: Prepared, place: Any
) -> tuple[Any, Any, Any]:
    """The user's model and a batch (synthetic, or the first of ``--data``, whose pipeline
    comes back too); its FLOPs counted from the step's HLO."""
    from gpuscout.measure.backends.jax.hlo import step_ir
    from gpuscout.measure.backends.keras import user_model as keras_user
    from gpuscout.predict.hlo import LOWER_BOUND, step_cost

    prep.built, notes = keras_user.prepare_user_model(keras_user.load_model(spec))
    prep.assumptions += notes
    pipe = None
    if config.data:
        data = parse_function_spec(config.data, "--data")
        pipe = host_data.user(
            lambda: user_code.call_function(data, "--data"), config.data, Knobs(), set(),
            None, place,
        )  # fmt: skip
        prep.batch_size = pipe.batch_size
        x, y = host_data.first_batch(pipe)
        prep.assumptions.append(
            f"data from {config.data}, repeated; batch size {prep.batch_size} read from it"
        )
    else:
        rng = np.random.default_rng(config.seed)
        inputs, y, notes = keras_user.synthetic_user_batch(prep.built.model, prep.built.loss,
                                                           batch, rng)  # fmt: skip
        prep.assumptions += notes
        x = inputs[0] if len(inputs) == 1 else tuple(inputs)
    ir = step_ir(jax, prep.built, config.precision, x, y)
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    prep.flops_per_step = cost.flops["matmul"] or None
    if prep.flops_per_step:
        prep.flops_method = (
            "counted from XLA's HLO of the jitted training step (dot and convolution only)"
        ) + (f"; {LOWER_BOUND}: a loop's trip count is unknown" if cost.flops_lower_bound else "")
    prep.epoch_samples = config.epoch_samples
    prep.workload_hash = environment.hash_parts(spec.path.read_bytes(), config.model or "")
    return x, y, pipe


def _measure(jax: Any, job: Job, device: jax_runtime.Device) -> RunResult:
    import keras

    config = job.config
    layout = distribute.plan(config)
    replicas = sharding.start(jax, layout) if layout.strategy else None
    if replicas is not None:
        device = checked_device(replicas.devices[0], config.precision)
    job.on_phase(BUILDING)
    t = prepare(jax, config, job.workload, job.model_spec, device, replicas)
    prep = t.prep
    prep.assumptions.append(
        "JAX backend: Keras 3 on JAX; "
        + (
            "Keras' model.fit (its jitted train step), timed per batch by a callback"
            if config.loop == "fit"
            else "the step is stateless_call + jax.value_and_grad + the optimizer's "
            "stateless_apply under jax.jit (XLA), its state donated"
        )
        + "; each step waits for its results"
    )
    prep.say_flops(own_model=job.model_spec is not None)
    job.on_phase("finding the device's peak FLOP/s")
    peak = peaks.replicated(
        jax_runtime.device_peak_flops(jax, device, config.precision), device.kind,
        replicas.replicas if replicas else 1,
    )  # fmt: skip
    prep.assumptions.append(f"peak for MFU: {peak[1]}")
    tf32 = jax_runtime.tf32_enabled(jax)
    if note := tf32_run_note(tf32, config.precision, device.kind, None):
        prep.assumptions.append(note)
    prep.assumptions.append(INTERVAL_ASSUMPTION)
    rule = StopRule(
        budget_s=config.seconds, fixed_steps=config.steps, fixed_warmup=config.warmup_steps
    )
    gc.collect()
    job.on_phase("measuring")
    protocol = Protocol(rule, job.on_progress)
    env = {  # before the steps: over workers, each sends the chief its own after them
        **environment.base_environment(),
        **jax_runtime.jax_environment(jax, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": True,
        "tf32_enabled": tf32,
        "workload_hash": prep.workload_hash,
    }
    gathered: list[WorkerRun] = []  # over workers, on the chief: every worker's row
    if config.loop == "fit":
        outcome = _fit(jax, config, t, protocol)
    else:
        outcome = _loop(jax, t, protocol, replicas, env, gathered)
    name = config.model if job.model_spec is not None and config.model else config.workload
    held = replicas.devices if replicas else [device]
    result = compose(
        config, replicas.name if replicas else device.name, prep, outcome, peak,
        jax_runtime.peak_memory(*held), [], env, name,
    )  # fmt: skip
    if replicas is None:
        return result
    spread = replicas.spread(prep.batch_size or 0).model_copy(update={"worker_runs": gathered})
    return result.model_copy(update={"distribution": spread})


def _loop(
    jax: Any, t: Trainable, protocol: Protocol, replicas: Replicas | None,
    env: dict[str, Any], gathered: list[WorkerRun],
) -> Outcome:  # fmt: skip
    """gpuscout's own loop: the jitted step, state threaded through, awaited each step; fed
    by the run's pipeline if it has one. Over workers, the chief decides when all stop, and
    gets every worker's row (``env``: this one's) in ``gathered``."""
    box = [t.state]
    batches = batches_of(t)

    def one_step() -> Any:
        x, y = next(batches)
        box[0], loss = t.step(box[0], x, y)
        jax.block_until_ready((box[0], loss))
        return loss  # ready: the protocol reads it to the host after the step's time is taken

    try:
        if replicas is not None and replicas.workers:
            r = replicas

            def after(outcome: Outcome) -> None:
                size = t.prep.batch_size
                gathered.extend(jax_workers.after_steps(jax, r, outcome, box[0], size, env))

            return jax_workers.agreed_run(
                jax, protocol, one_step, r.task_index == 0, r.split(), r.replicated(), after
            )
        outcome = protocol.run(one_step, returns_loss=True)
    finally:
        host_data.close_iterator(batches)
    return checked(outcome, [*box[0][0], *box[0][1]])  # trainable and not, as model.weights


def batches_of(t: Trainable) -> Iterator[tuple[Any, Any]]:
    """The run's batches for ever: its pipeline's, or its one batch already on the device."""
    if t.batches is not None:
        yield from t.batches
        return
    while True:
        yield t.x, t.y


def _fit(jax: Any, config: BenchConfig, t: Trainable, protocol: Protocol) -> Outcome:
    """Keras' ``model.fit`` on JAX, fed the run's batches for ever."""
    from gpuscout.measure.backends.keras.fit import fit_loop

    batches = batches_of(t)
    try:
        outcome = fit_loop(t.prep.built, batches, config.precision, True, protocol, lambda: None)
    finally:
        host_data.close_iterator(batches)
    return checked(outcome, t.prep.built.model.weights)


def losses(workload: Workload, dims: dict[str, int], precision: str, batch: int, steps: int,
           seed: int = 0, learning_rate: float | None = None, devices: int = 1,
           ) -> list[float]:  # fmt: skip
    """The loss of each of ``steps`` steps on one repeated batch (for tests: it must fall, and
    be the same split over ``devices`` as on one), and nothing else measured;
    ``learning_rate`` replaces the workload's own."""
    jax = jax_runtime.import_jax()
    import keras

    from gpuscout.measure.backends.keras.models import BUILDERS

    jax_runtime.seed_keras(keras, seed)
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    resolved = workload.resolve(dims)
    built = BUILDERS[workload.name](resolved)
    if learning_rate is not None:
        built.optimizer.learning_rate = learning_rate
    replicas = None
    if devices > 1:
        replicas = sharding.start(jax, distribute.Plan(distribute.JAX_SHARDING, count=devices))
    step, state = train_step(jax, built, precision, replicas=replicas)
    x, y = arrays(workload, resolved, batch, seed)
    if replicas is not None:
        x, y = jax.device_put((x, y), replicas.split())
    out = []
    for _ in range(steps):
        state, loss = step(state, x, y)
        out.append(float(loss))
    return out
