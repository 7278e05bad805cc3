"""The TensorFlow measuring backend: build the workload, time it, and describe the result.

Called only through :func:`gpuscout.measure.benchmark.bench`, which validates the settings first
and turns failures into stored results.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, RunResult, WorkerRun
from gpuscout.core.run_settings import tf32_run_note
from gpuscout.measure import environment, peaks, user_code
from gpuscout.measure.backends.keras.weights import checked
from gpuscout.measure.backends.tensorflow import data as tf_data
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.measure.job import Job
from gpuscout.measure.protocol import (
    BUILDING,
    INTERVAL_ASSUMPTION,
    Outcome,
    Progress,
    Protocol,
    StopRule,
)
from gpuscout.measure.result import Prepared, compose
from gpuscout.measure.synthetic import arrays
from gpuscout.measure.user_spec import ModelSpec, parse_function_spec
from gpuscout.scale import distribute
from gpuscout.workloads import Workload

if TYPE_CHECKING:
    from gpuscout.measure.backends.tensorflow import strategy as tf_distribute


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
    from gpuscout.measure.backends.keras.models import BUILDERS

    dims = workload.resolve(config.dims)
    builder = BUILDERS[workload.name]
    prep.built = builder(dims)
    if workload.has_pipeline:  # its own (slow) input pipeline is the point of the workload
        pipe = tf_data.builtin(tf, workload, dims, batch, tf_data.Knobs(), config.seed)
        prep.dataset = pipe.dataset
        prep.assumptions += pipe.notes
    else:
        x, y = arrays(workload, dims, batch, config.seed)
        prep.dataset = _synthetic_dataset(tf, x, y)
    prep.describe_builtin(workload, dims, batch, config, builder)
    if not workload.has_pipeline:
        prep.assumptions.append(
            "synthetic data: one random batch made once and repeated through tf.data with "
            "prefetch(2), so the device is measured, not an input pipeline"
        )


def _prepare_user(
    tf: Any, spec: ModelSpec, config: BenchConfig, batch: int, prep: Prepared
) -> None:
    from gpuscout.measure.backends.keras import user_model as keras_user
    from gpuscout.measure.backends.tensorflow import flops as tf_flops

    model = keras_user.load_model(spec)
    prep.built, notes = keras_user.prepare_user_model(model)
    prep.assumptions += notes
    if config.data:
        dataset = user_code.call_function(parse_function_spec(config.data, "--data"), "--data")
        if not isinstance(dataset, tf.data.Dataset):
            raise UserError(
                f"--data '{config.data}' returned {type(dataset).__name__}, not a tf.data.Dataset.",
                "return a batched tf.data.Dataset of (inputs, labels).",
            )
        first_x = _first_batch(dataset, config.data)[0]
        first = first_x[0] if isinstance(first_x, tuple | list) else first_x
        prep.batch_size = int(first.shape[0])
        prep.dataset = dataset.repeat()
        prep.assumptions.append(
            f"data from {config.data}, repeated; batch size {prep.batch_size} read from it"
        )
    else:
        rng = np.random.default_rng(config.seed)
        x, y, notes = keras_user.synthetic_user_batch(model, prep.built.loss, batch, rng)
        prep.assumptions += notes
        prep.dataset = _synthetic_dataset(tf, x[0] if len(x) == 1 else x, y)
    counted = tf_flops.training_flops_per_step(
        tf, model, prep.batch_size or batch, config.precision
    )
    if counted is not None:
        prep.flops_per_step, prep.flops_method = counted
    prep.epoch_samples = config.epoch_samples
    prep.workload_hash = environment.hash_parts(spec.path.read_bytes(), config.model or "")


def _first_batch(dataset: Any, data: str) -> Any:
    """The user's first batch; a pipeline that is empty or fails before anything is measured
    is refused (UserError), like any other problem found while building. Out of memory is the
    device's answer and is stored as an oom run instead."""
    from gpuscout.core.errors import is_oom

    try:
        return next(iter(dataset))
    except StopIteration:
        raise UserError(
            f"--data {data} returned an empty dataset.", "return one with at least one batch."
        ) from None
    except Exception as exc:
        if is_oom(exc):
            raise
        line = (str(exc).strip().splitlines() or [""])[0][:300]
        raise UserError(
            f"--data {data} failed reading its first batch: {type(exc).__name__}: {line}",
            "fix the pipeline; iterating it in Python shows the traceback.",
        ) from None


def run(job: Job) -> RunResult:
    """Measure ``job.config`` on the device; raises on failure (the caller stores it).

    The global Keras precision policy and TensorFlow's TF32 switch are restored afterwards, so
    that calling ``gpuscout.bench`` from a user's program does not change how their models are
    built or run.
    """
    config = job.config
    job.on_phase("starting TensorFlow")
    tf = tf_runtime.import_tensorflow()
    import keras

    previous_policy = keras.mixed_precision.global_policy()
    previous_tf32 = tf_runtime.set_tf32(tf, config.tf32)  # before any op runs
    try:
        return _measure(tf, config, job.workload, job.model_spec, job.on_progress, job.on_phase)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
        tf_runtime.set_tf32(tf, previous_tf32)


def _measure(
    tf: Any,
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    on_progress: Callable[[Progress], None] | None,
    on_phase: Callable[[str], None],
) -> RunResult:
    import keras

    from gpuscout.measure.backends.tensorflow import (
        strategy as tf_distribute,  # imports Keras: only once TensorFlow is up
    )

    if config.mode == "inference":
        from gpuscout.measure.backends.tensorflow.serve import run_inference

        device = tf_runtime.resolve_device(tf, config.device)
        keras.utils.set_random_seed(config.seed)
        return run_inference(tf, config, workload, model_spec, device, on_phase)
    layout = distribute.plan(config)
    replicas = (
        tf_distribute.start(tf, layout, config.worker_timeout_s, on_phase)
        if layout.strategy
        else None
    )
    keras.utils.set_random_seed(config.seed)
    device = tf_runtime.resolve_device(tf, replicas.devices[0] if replicas else config.device)
    warnings: list[str] = []
    if note := tf_runtime.precision_warning(device, config.precision):
        warnings.append(note)
    on_phase(BUILDING)
    prep = prepare(tf, config, workload, model_spec, device, replicas)
    if prep.flops_method:
        from gpuscout.measure.backends.tensorflow.flops import HLO_METHOD

        # counted on the step's own HLO, or 3 x the forward pass
        how = "" if prep.flops_method.startswith(HLO_METHOD) else "training = 3 x forward "
        prep.assumptions.append(f"FLOPs per step: {how}(2 per multiply-add); {prep.flops_method}")
    on_phase("finding the device's peak FLOP/s")
    peak = _peak(tf, device, config.precision, replicas)
    prep.assumptions.append(f"peak for MFU: {peak[1]}")
    if device.kind == "GPU":
        prep.assumptions.append(tf_runtime.MEMORY_GROWTH_NOTE)
    tf32 = tf_runtime.tf32_environment(tf, device)
    if note := tf32_run_note(
        bool(tf32["tf32_enabled"]), config.precision, device.kind, device.compute_capability
    ):
        prep.assumptions.append(note)
    prep.assumptions.append(INTERVAL_ASSUMPTION)

    def sync() -> None:
        tf_runtime.sync(tf, device)

    rule = StopRule(
        budget_s=config.seconds,
        fixed_steps=config.steps,
        fixed_warmup=config.warmup_steps,
    )
    tf_runtime.reset_peak_memory(tf, device)
    gc.collect()  # start from a clean heap: building the model left garbage behind
    # before the steps: over workers, each sends it to the chief with its row after them
    env = {
        **environment.base_environment(),
        **tf_runtime.tf_environment(tf, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": config.xla,
        **tf32,
        "workload_hash": prep.workload_hash,
    }
    on_phase("measuring")
    protocol = Protocol(rule, on_progress)
    outcome = _train(tf, config, prep, device, replicas, protocol, sync, env)
    outcome = checked(outcome, prep.built.model.weights)  # a NaN the loss never showed
    name = config.model if model_spec is not None and config.model else config.workload
    result = compose(
        config,
        replicas.name if replicas else device.name,
        prep,
        outcome,
        peak,
        tf_runtime.peak_memory(tf, device),
        warnings,
        env,
        name,
    )
    if replicas is None:
        return result
    r = replicas
    spread = distribute.spread(
        r.plan.strategy or distribute.MIRRORED, r.devices, r.logical, r.replicas,
        prep.batch_size, r.workers,
    )  # fmt: skip
    gathered = {**r.network, "worker_runs": list(r.worker_runs)}  # the rows: on the chief
    return result.model_copy(update={"distribution": spread.model_copy(update=gathered)})


def _train(
    tf: Any,
    config: BenchConfig,
    prep: Prepared,
    device: tf_runtime.Device,
    replicas: tf_distribute.Replicas | None,
    protocol: Protocol,
    sync: Callable[[], None],
    env: dict[str, Any],
) -> Outcome:
    """Time the steps with the loop ``config`` asks for; over workers, each sends the chief
    its own row (``env``: this worker's environment)."""
    from gpuscout.measure import worker_rows
    from gpuscout.measure.backends.tensorflow import strategy as tf_distribute
    from gpuscout.measure.backends.tensorflow import train as tf_train

    if replicas is not None:
        r = replicas

        def own_row(outcome: Outcome) -> WorkerRun:
            return worker_rows.own_row(r.plan.task_index, r.address, outcome, prep.batch_size, env)

        with replicas.strategy.scope():
            return tf_distribute.distributed_loop(
                tf, replicas, prep.built, prep.dataset, config.precision, protocol, sync,
                own_row if r.workers > 1 else None,
            )  # fmt: skip
    with tf.device(device.tf_name):
        if config.loop == "fit":
            return tf_train.fit_loop(
                prep.built, prep.dataset, config.precision, config.xla, protocol, sync
            )
        return tf_train.custom_loop(
            tf, prep.built, prep.dataset, config.precision, config.xla, protocol, sync
        )


def _peak(
    tf: Any, device: tf_runtime.Device, precision: str, replicas: tf_distribute.Replicas | None
) -> tuple[float | None, str]:
    """Peak FLOP/s of all the replicas together, for MFU."""
    one = tf_runtime.device_peak_flops(tf, device, precision)
    return one if replicas is None else peaks.replicated(one, device.kind, replicas.replicas)


def prepare(
    tf: Any,
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    device: tf_runtime.Device,
    replicas: tf_distribute.Replicas | None = None,
) -> Prepared:
    """The model, its data and what was assumed, built on ``device`` (or under the strategy
    of ``replicas``, with global batches) under the precision's global Keras policy (set
    here; the caller restores it)."""
    import keras

    keras.mixed_precision.set_global_policy(
        "float32" if config.precision == "fp32" else config.precision
    )
    prep = Prepared()
    batch = config.batch_size or _default_batch(workload, device)
    if not config.batch_size and not config.global_batch_size:
        prep.assumptions.append(
            f"batch size {batch}{' per replica' if replicas else ''}: gpuscout's default on a "
            f"{device.kind} (article 001 uses 256 on a GPU); set it with --batch-size"
        )
    if replicas is not None:
        per, batch = distribute.batches(config, replicas.replicas, batch)
        prep.assumptions += _replica_notes(replicas, per, batch)
    prep.batch_size = batch
    scope = replicas.strategy.scope() if replicas else tf.device(device.tf_name)
    with scope:
        if model_spec is not None:
            _prepare_user(tf, model_spec, config, batch, prep)
        else:
            assert workload is not None
            _prepare_builtin(tf, workload, config, batch, prep)
    return prep


def _replica_notes(replicas: tf_distribute.Replicas, per: int, batch: int) -> list[str]:
    r = replicas
    where = (
        f"{r.workers} workers ({', '.join(r.plan.workers)}), each on {', '.join(r.devices)}"
        if r.workers > 1
        else ", ".join(r.devices)
    )
    notes = distribute.replica_notes(
        r.plan.strategy or distribute.MIRRORED, where, r.replicas, per, batch,
        f"{len(r.devices)} TensorFlow devices" if r.logical else None,
    )  # fmt: skip
    notes.insert(
        1,
        "each replica's loss is divided by the replica count, so the all-reduced gradients "
        "are those of the global batch's mean loss",
    )
    if r.workers > 1:
        notes.append(
            "timing is the chief's (task 0); the stop decision is shared by one extra "
            "all-reduce of a scalar after each step, outside the timed step"
        )
    return notes


def _default_batch(workload: Workload | None, device: tf_runtime.Device) -> int:
    if workload is None:
        return 256 if device.kind == "GPU" else 32
    return workload.default_batch_gpu if device.kind == "GPU" else workload.default_batch_cpu
