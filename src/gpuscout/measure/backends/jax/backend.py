"""The JAX measuring backend: a built-in workload's Keras model trained by a stateless step
under ``jax.jit``, timed by the same protocol as the TensorFlow backend.

Called only through :func:`gpuscout.measure.benchmark.bench`, which checks the settings first
(what JAX cannot do is refused there, by name) and turns failures into stored results.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from gpuscout.errors import UserError
from gpuscout.measure import environment
from gpuscout.measure.backends.jax import runtime as jax_runtime
from gpuscout.measure.job import Job
from gpuscout.measure.protocol import BUILDING, Progress, Protocol, StopRule
from gpuscout.measure.result import Prepared, compose
from gpuscout.measure.synthetic import arrays
from gpuscout.records import BenchConfig, RunResult
from gpuscout.run_settings import tf32_run_note
from gpuscout.workloads import Workload

NOT_ON_JAX_KERAS = (
    "Keras in this process runs on {backend}, not JAX: Keras picks its backend once, when it is "
    "first imported."
)


def train_step(jax: Any, built: Any, precision: str) -> tuple[Any, Any]:
    """The jitted step ``(state, x, y) -> (state, loss)`` and the model's initial state.

    The stateless Keras 3 pattern: ``stateless_call`` for the forward pass (the non-trainable
    state, e.g. dropout's seed, comes back updated), ``jax.value_and_grad`` of the loss,
    ``optimizer.stateless_apply`` for the update, and the state's buffers donated to the next
    step. float16 scales the loss (LossScaleOptimizer), as the TensorFlow step does.
    """
    import keras

    model, loss_fn, optimizer = built.model, built.loss, built.optimizer
    if precision == "mixed_float16" and not isinstance(
        optimizer, keras.optimizers.LossScaleOptimizer
    ):
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    optimizer.build(model.trainable_variables)

    def loss_and_state(tv: Any, ntv: Any, ov: Any, x: Any, y: Any) -> Any:
        pred, ntv = model.stateless_call(tv, ntv, x, training=True)
        loss = loss_fn(y, keras.ops.cast(pred, "float32"))
        with keras.StatelessScope(state_mapping=list(zip(optimizer.variables, ov, strict=True))):
            scaled = optimizer.scale_loss(loss)
        return scaled, (loss, ntv)

    grad = jax.value_and_grad(loss_and_state, has_aux=True)

    def step(state: Any, x: Any, y: Any) -> Any:
        tv, ntv, ov = state
        (_, (loss, ntv)), grads = grad(tv, ntv, ov, x, y)
        tv, ov = optimizer.stateless_apply(ov, grads, tv)
        return (tv, ntv, ov), loss

    state = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )
    return jax.jit(step, donate_argnums=0), state


def run(job: Job) -> RunResult:
    """Measure ``job.config`` on a JAX device; raises on failure (the caller stores it). The
    global Keras dtype policy and JAX's matmul precision are restored afterwards."""
    config, workload, on_phase = job.config, job.workload, job.on_phase
    on_phase("starting JAX")
    jax = jax_runtime.import_jax()
    import keras

    if keras.backend.backend() != "jax":
        raise UserError(
            NOT_ON_JAX_KERAS.format(backend=keras.backend.backend()),
            "run it through the gpuscout command (its measuring process starts Keras on JAX), "
            "or set KERAS_BACKEND=jax before anything imports Keras.",
        )
    if workload is None or job.model_spec is not None:
        raise UserError("--backend jax measures the built-in workloads only, for now.",
                        "drop --model, or use --backend tensorflow.")  # fmt: skip
    previous_policy = keras.mixed_precision.global_policy()
    previous_tf32 = jax_runtime.set_tf32(jax, config.tf32)
    try:
        return _measure(jax, config, workload, job.on_progress, on_phase)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
        jax.config.update("jax_default_matmul_precision", previous_tf32)


def _measure(
    jax: Any,
    config: BenchConfig,
    workload: Workload,
    on_progress: Callable[[Progress], None] | None,
    on_phase: Callable[[str], None],
) -> RunResult:
    import keras

    from gpuscout.measure.backends.keras.models import BUILDERS

    device = jax_runtime.resolve_device(jax, config.device)
    if device.kind == "CPU" and config.precision == "mixed_float16":
        raise UserError(
            "--precision mixed_float16 on JAX needs a GPU: XLA's CPU backend has no float16 "
            "matmul with float32 accumulation.",
            "use --precision mixed_bfloat16 or fp32 on a CPU, or --backend tensorflow.",
        )
    keras.utils.set_random_seed(config.seed)
    on_phase(BUILDING)
    keras.mixed_precision.set_global_policy(
        "float32" if config.precision == "fp32" else config.precision
    )
    dims = workload.resolve(config.dims)
    batch = config.batch_size or (
        workload.default_batch_gpu if device.kind == "GPU" else workload.default_batch_cpu
    )
    prep = Prepared(batch_size=batch)
    if not config.batch_size:
        prep.assumptions.append(
            f"batch size {batch}: gpuscout's default on a {device.kind} (article 001 uses 256 "
            "on a GPU); set it with --batch-size"
        )
    builder = BUILDERS[workload.name]
    with jax.default_device(device.handle):
        prep.built = builder(dims)
        step, state = train_step(jax, prep.built, config.precision)
        x, y = (jax.device_put(a, device.handle) for a in arrays(workload, dims, batch,
                                                                   config.seed))  # fmt: skip
    prep.describe_builtin(workload, dims, batch, config, builder)
    prep.assumptions += [
        "synthetic data: one random batch placed on the device once and fed to every step, so "
        "the device is measured, not an input pipeline",
        "JAX backend: Keras 3 on JAX; the step is stateless_call + jax.value_and_grad + the "
        "optimizer's stateless_apply under jax.jit (XLA), its state donated; each step waits "
        "for its results (block_until_ready)",
    ]
    if prep.flops_method:
        prep.assumptions.append(
            f"FLOPs per step: training = 3 x forward (2 per multiply-add); {prep.flops_method}"
        )
    on_phase("finding the device's peak FLOP/s")
    peak = jax_runtime.device_peak_flops(jax, device, config.precision)
    prep.assumptions.append(f"peak for MFU: {peak[1]}")
    tf32 = jax_runtime.tf32_enabled(jax)
    if note := tf32_run_note(tf32, config.precision, device.kind, None):
        prep.assumptions.append(note)
    prep.assumptions.append(
        "the median's 95% interval: order statistics per step, widened from 60 steps on to "
        "those of the medians of 12-30 consecutive blocks, so slow drift widens it"
    )
    rule = StopRule(
        budget_s=config.seconds, fixed_steps=config.steps, fixed_warmup=config.warmup_steps
    )
    box = [state]

    def one_step() -> None:
        box[0], loss = step(box[0], x, y)
        jax.block_until_ready((box[0], loss))

    gc.collect()
    on_phase("measuring")
    outcome = Protocol(rule, on_progress).run(one_step)
    env = {
        **environment.base_environment(),
        **jax_runtime.jax_environment(jax, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": True,
        "tf32_enabled": tf32,
        "workload_hash": prep.workload_hash,
    }
    return compose(
        config, device.name, prep, outcome, peak, jax_runtime.peak_memory(device), [], env,
        config.workload,
    )  # fmt: skip


def losses(workload: Workload, dims: dict[str, int], precision: str, batch: int, steps: int,
           seed: int = 0, learning_rate: float | None = None) -> list[float]:  # fmt: skip
    """The loss of each of ``steps`` steps on one repeated batch (for tests: it must fall), and
    nothing else measured; ``learning_rate`` replaces the workload's own."""
    jax = jax_runtime.import_jax()
    import keras

    from gpuscout.measure.backends.keras.models import BUILDERS

    keras.utils.set_random_seed(seed)
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    resolved = workload.resolve(dims)
    built = BUILDERS[workload.name](resolved)
    if learning_rate is not None:
        built.optimizer.learning_rate = learning_rate
    step, state = train_step(jax, built, precision)
    x, y = arrays(workload, resolved, batch, seed)
    out = []
    for _ in range(steps):
        state, loss = step(state, x, y)
        out.append(float(loss))
    return out
