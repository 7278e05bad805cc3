"""The TensorFlow measuring backend: build the workload, time it, and describe the result.

Called only through :func:`gpuscout.measure.benchmark.bench`, which validates the settings first
and turns failures into stored results.
"""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuscout.errors import UserError
from gpuscout.measure import environment, tf_data, tf_runtime
from gpuscout.measure.protocol import Progress, Protocol, StopRule
from gpuscout.measure.result import Prepared, compose
from gpuscout.measure.user_spec import ModelSpec, parse_function_spec
from gpuscout.measure.workloads import Workload
from gpuscout.records import BenchConfig, RunResult


def _synthetic_dataset(tf: Any, x: Any, y: Any) -> Any:
    """One random batch, made once and repeated: measures the device, not an input pipeline.

    A fixed prefetch of 2 with tf.data's autotuning off: there is nothing to tune in a repeated
    constant, and the autotuner's thread made deleting the iterator at the end of a run block
    for up to a minute (its optimisation period grows to 60 s; seen through the monitor).
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(2)
    return dataset.with_options(options)


def _prepare_builtin(
    tf: Any, workload: Workload, config: BenchConfig, batch: int, prep: Prepared
) -> None:
    from gpuscout.measure.tf_models import BUILDERS

    dims = workload.resolve(config.dims)
    builder = BUILDERS[workload.name]
    prep.built = builder(dims)
    if workload.has_pipeline:  # its own (slow) input pipeline is the point of the workload
        pipe = tf_data.builtin(tf, workload, dims, batch, tf_data.Knobs(), config.seed)
        prep.dataset = pipe.dataset
        prep.assumptions += pipe.notes
    else:
        x, y = tf_data.arrays(workload, dims, batch, config.seed)
        prep.dataset = _synthetic_dataset(tf, x, y)
    flops = workload.training_flops_per_sample(dims)
    if flops is not None:
        prep.flops_per_step = flops * batch
        prep.flops_method = workload.flops_note
    prep.epoch_samples = config.epoch_samples or workload.epoch_samples
    prep.epoch_unit = workload.epoch_unit
    prep.assumptions.append(f"epoch = {prep.epoch_samples:,} {workload.epoch_unit}")
    prep.workload_hash = environment.hash_parts(
        workload.name, repr(sorted(dims.items())), inspect.getsource(builder)
    )
    if not workload.has_pipeline:
        prep.assumptions.append(
            "synthetic data: one random batch made once and repeated through tf.data with "
            "prefetch(2), so the device is measured, not an input pipeline"
        )


def _prepare_user(
    tf: Any, spec: ModelSpec, config: BenchConfig, batch: int, prep: Prepared
) -> None:
    from gpuscout.measure import tf_flops, tf_user

    model = tf_user.load_model(spec)
    prep.built, notes = tf_user.prepare_user_model(model)
    prep.assumptions += notes
    if config.data:
        dataset = tf_user.call_function(parse_function_spec(config.data, "--data"), "--data")
        if not isinstance(dataset, tf.data.Dataset):
            raise UserError(
                f"--data '{config.data}' returned {type(dataset).__name__}, not a tf.data.Dataset.",
                "return a batched tf.data.Dataset of (inputs, labels).",
            )
        first_x = next(iter(dataset))[0]
        first = first_x[0] if isinstance(first_x, tuple | list) else first_x
        prep.batch_size = int(first.shape[0])
        prep.dataset = dataset.repeat()
        prep.assumptions.append(
            f"data from {config.data}, repeated; batch size {prep.batch_size} read from it"
        )
    else:
        rng = np.random.default_rng(config.seed)
        x, y, notes = tf_user.synthetic_user_batch(model, prep.built.loss, batch, rng)
        prep.assumptions += notes
        prep.dataset = _synthetic_dataset(tf, x[0] if len(x) == 1 else x, y)
    per_sample = tf_flops.training_flops_per_sample(tf, model)
    if per_sample is not None:
        prep.flops_per_step = per_sample * (prep.batch_size or batch)
        prep.flops_method = (
            "counted from TensorFlow's graph of the model: matmul, conv and einsum only"
        )
    prep.epoch_samples = config.epoch_samples
    prep.workload_hash = environment.hash_parts(spec.path.read_bytes(), config.model or "")


def run(
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    on_progress: Callable[[Progress], None] | None,
    on_phase: Callable[[str], None],
) -> RunResult:
    """Measure ``config`` on the device; raises on failure (the caller stores it).

    The global Keras precision policy is restored afterwards, so that calling
    ``gpuscout.bench`` from a user's program does not change how their models are built.
    """
    on_phase("starting TensorFlow")
    tf = tf_runtime.import_tensorflow()
    import keras

    previous_policy = keras.mixed_precision.global_policy()
    try:
        return _measure(tf, config, workload, model_spec, on_progress, on_phase)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)


def _measure(
    tf: Any,
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    on_progress: Callable[[Progress], None] | None,
    on_phase: Callable[[str], None],
) -> RunResult:
    import keras

    keras.utils.set_random_seed(config.seed)
    device = tf_runtime.resolve_device(tf, config.device)
    warnings: list[str] = []
    if note := tf_runtime.precision_warning(device, config.precision):
        warnings.append(note)
    on_phase("building the model")
    prep = prepare(tf, config, workload, model_spec, device)
    if prep.flops_method:
        prep.assumptions.append(
            f"FLOPs per step: training = 3 x forward (2 per multiply-add); {prep.flops_method}"
        )
    on_phase("finding the device's peak FLOP/s")
    peak = tf_runtime.device_peak_flops(tf, device, config.precision)
    prep.assumptions.append(f"peak for MFU: {peak[1]}")
    if device.kind == "GPU":
        prep.assumptions.append(tf_runtime.MEMORY_GROWTH_NOTE)
    if tf_runtime.tf32_in_effect(tf, device):
        prep.assumptions.append("TF32 is on for fp32 matmuls/convs (TensorFlow's default)")
    prep.assumptions.append(
        "the median's 95% interval: order statistics per step, widened from 60 steps on to "
        "those of the medians of 12-30 consecutive blocks, so slow drift widens it"
    )

    def sync() -> None:
        tf_runtime.sync(tf, device)

    rule = StopRule(
        budget_s=config.seconds,
        fixed_steps=config.steps,
        fixed_warmup=config.warmup_steps,
    )
    tf_runtime.reset_peak_memory(tf, device)
    gc.collect()  # start from a clean heap: building the model left garbage behind
    on_phase("measuring")
    from gpuscout.measure import tf_train

    with tf.device(device.tf_name):
        protocol = Protocol(rule, on_progress)
        if config.loop == "fit":
            outcome = tf_train.fit_loop(
                prep.built, prep.dataset, config.precision, config.xla, protocol, sync
            )
        else:
            outcome = tf_train.custom_loop(
                tf, prep.built, prep.dataset, config.precision, config.xla, protocol, sync
            )
    env = {
        **environment.base_environment(),
        **tf_runtime.tf_environment(tf, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": config.xla,
        "tf32": tf_runtime.tf32_in_effect(tf, device),
        "workload_hash": prep.workload_hash,
    }
    name = config.model if model_spec is not None and config.model else config.workload
    return compose(
        config,
        device.name,
        prep,
        outcome,
        peak,
        tf_runtime.peak_memory(tf, device),
        warnings,
        env,
        name,
    )


def prepare(
    tf: Any,
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    device: tf_runtime.Device,
) -> Prepared:
    """The model, its data and what was assumed, built on ``device`` under the precision's
    global Keras policy (set here; the caller restores it)."""
    import keras

    keras.mixed_precision.set_global_policy(
        "float32" if config.precision == "fp32" else config.precision
    )
    prep = Prepared()
    if config.batch_size:
        batch = config.batch_size
    else:
        batch = _default_batch(workload, device)
        prep.assumptions.append(
            f"batch size {batch}: gpuscout's default on a {device.kind} "
            "(the articles use 256 on a GPU); set it with --batch-size"
        )
    prep.batch_size = batch
    with tf.device(device.tf_name):
        if model_spec is not None:
            _prepare_user(tf, model_spec, config, batch, prep)
        else:
            assert workload is not None
            _prepare_builtin(tf, workload, config, batch, prep)
    return prep


def _default_batch(workload: Workload | None, device: tf_runtime.Device) -> int:
    if workload is None:
        return 256 if device.kind == "GPU" else 32
    return workload.default_batch_gpu if device.kind == "GPU" else workload.default_batch_cpu
