"""The TensorFlow measuring backend: build the workload, time it, and describe the result.

Called only through :func:`gpuscout.measure.bench.bench`, which validates the settings first
and turns failures into stored results.
"""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from gpuscout.errors import UserError
from gpuscout.measure import environment, tf_runtime
from gpuscout.measure.protocol import Outcome, Progress, Protocol, StopRule
from gpuscout.measure.user_spec import ModelSpec, parse_function_spec
from gpuscout.measure.workloads import Workload
from gpuscout.records import BenchConfig, Interval, RunResult, StepTimes, Warmup

CV_WARN = 0.07
MIN_STEPS_WARN = 20


class Prepared:
    """Everything a measurement needs, built on the device, plus what was assumed."""

    def __init__(self) -> None:
        self.built: Any = None
        self.dataset: Any = None
        self.batch_size = 0
        self.flops_per_step: float | None = None
        self.flops_method: str | None = None
        self.epoch_samples: int | None = None
        self.workload_hash = ""
        self.assumptions: list[str] = []


def _synthetic_dataset(tf: Any, x: Any, y: Any) -> Any:
    """One random batch, made once and repeated: measures the device, not an input pipeline."""
    return tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(tf.data.AUTOTUNE)


def _prepare_builtin(
    tf: Any, workload: Workload, config: BenchConfig, batch: int, prep: Prepared
) -> None:
    from gpuscout.measure.tf_models import BUILDERS

    dims = workload.resolve(config.dims)
    builder = BUILDERS[workload.name]
    prep.built = builder(dims)
    rng = np.random.default_rng(config.seed)
    shape = (batch, *workload.input_shape(dims))
    if workload.input_dtype.startswith("int"):
        x = rng.integers(0, dims["vocab"], size=shape).astype(workload.input_dtype)
    else:
        x = rng.random(shape, dtype=np.float32)
    y = rng.integers(0, dims["classes"], size=(batch, *workload.label_shape)).astype("int32")
    prep.dataset = _synthetic_dataset(tf, x, y)
    flops = workload.training_flops_per_sample(dims)
    if flops is not None:
        prep.flops_per_step = flops * batch
        prep.flops_method = workload.flops_note
    prep.epoch_samples = config.epoch_samples or workload.epoch_samples
    prep.assumptions.append(f"epoch = {prep.epoch_samples:,} {workload.epoch_unit}")
    prep.workload_hash = environment.hash_parts(
        workload.name, repr(sorted(dims.items())), inspect.getsource(builder)
    )
    prep.assumptions.append(
        "synthetic data: one random batch made once and repeated through tf.data with "
        "prefetch(AUTOTUNE), so the device is measured, not an input pipeline"
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
        prep.flops_method = "counted: 3 x forward FLOPs from TensorFlow's graph profiler"
    prep.epoch_samples = config.epoch_samples
    prep.workload_hash = environment.hash_parts(spec.path.read_bytes(), config.model or "")


def _result(
    config: BenchConfig,
    device: tf_runtime.Device,
    prep: Prepared,
    outcome: Outcome,
    peak: tuple[float | None, str],
    memory: tuple[int, str],
    warnings: list[str],
    env: dict[str, Any],
    workload_name: str,
) -> RunResult:
    s, batch = outcome.summary, prep.batch_size
    rel = s.rel_halfwidth
    ci_ok = np.isfinite(s.ci_low)
    if s.cv > CV_WARN:
        warnings.append(
            f"unstable: step times vary with CV {s.cv:.1%} (> {CV_WARN:.0%}). Close other "
            "programs, check for thermal or power throttling, and measure longer (--seconds)."
        )
    if outcome.stop_reason == "budget" and rel > 0.02:
        width = f"+-{rel:.1%}" if ci_ok else "undefined (too few steps)"
        warnings.append(
            f"too short: the time budget ran out with the interval at {width}, wider than the "
            "+-2% target. Raise --seconds."
        )
    if s.n < MIN_STEPS_WARN:
        warnings.append(
            f"too short: only {s.n} measured steps. Raise --seconds (or --steps) for at least "
            f"{MIN_STEPS_WARN}."
        )
    if outcome.warmup_method == "not found":
        warnings.append(
            "no steady state was detected: the first steps kept getting faster, so later ones "
            "were measured anyway. Measure longer (--seconds) or fix warm-up (--warmup-steps)."
        )
    if s.outliers > max(1, 0.05 * s.n):
        warnings.append(
            f"{s.outliers} of {s.n} steps are outliers (MAD): something else competes for the "
            "device or the CPU."
        )
    tput_med = batch / s.median
    flops_rate = prep.flops_per_step / s.median if prep.flops_per_step else None
    peak_flops, peak_source = peak
    return RunResult(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        status="ok",
        workload=workload_name,
        device=device.name,
        precision=config.precision,
        xla=config.xla,
        loop=config.loop,
        batch_size=batch,
        samples_per_second=Interval(
            median=tput_med,
            ci_low=batch / s.ci_high if ci_ok else None,
            ci_high=batch / s.ci_low if ci_ok else None,
        ),
        mean_samples_per_second=batch / s.mean,
        step_time_s=StepTimes(median=s.median, p5=s.p5, p95=s.p95, mean=s.mean),
        ci_rel_halfwidth=rel if ci_ok else None,
        cv=s.cv,
        outliers=s.outliers,
        warmup=Warmup(
            steps=outcome.warmup_steps,
            seconds=outcome.warmup_seconds,
            method=outcome.warmup_method,
        ),
        measured_steps=s.n,
        stop_reason=outcome.stop_reason,
        flops_per_step=prep.flops_per_step,
        flops_method=prep.flops_method,
        tflops=flops_rate / 1e12 if flops_rate else None,
        peak_tflops=peak_flops / 1e12 if peak_flops else None,
        peak_source=peak_source,
        mfu=flops_rate / peak_flops if flops_rate and peak_flops else None,
        epoch_samples=prep.epoch_samples,
        epoch_seconds=prep.epoch_samples / tput_med if prep.epoch_samples else None,
        peak_memory_bytes=memory[0],
        memory_method=memory[1],
        warnings=warnings,
        assumptions=prep.assumptions,
        config=config,
        env=env,
        step_times_s=list(outcome.times),
    )


def run(
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    on_progress: Callable[[Progress], None] | None,
    on_phase: Callable[[str], None],
) -> RunResult:
    """Measure ``config`` on the device; raises on failure (the caller stores it)."""
    on_phase("starting TensorFlow")
    tf = tf_runtime.import_tensorflow()
    import keras

    keras.utils.set_random_seed(config.seed)
    device = tf_runtime.resolve_device(tf, config.device)
    warnings: list[str] = []
    if note := tf_runtime.precision_warning(device, config.precision):
        warnings.append(note)
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
    on_phase("building the model")
    with tf.device(device.tf_name):
        if model_spec is not None:
            _prepare_user(tf, model_spec, config, batch, prep)
        else:
            assert workload is not None
            _prepare_builtin(tf, workload, config, batch, prep)
    if prep.flops_method:
        prep.assumptions.append(
            f"FLOPs per step: training = 3 x forward (2 per multiply-add); {prep.flops_method}"
        )
    on_phase("finding the device's peak FLOP/s")
    peak = tf_runtime.device_peak_flops(tf, device, config.precision)
    prep.assumptions.append(f"peak for MFU: {peak[1]}")
    if tf_runtime.tf32_in_effect(tf, device):
        prep.assumptions.append("TF32 is on for fp32 matmuls/convs (TensorFlow's default)")
    prep.assumptions.append(
        "the median's 95% interval: order statistics over medians of 30 consecutive blocks "
        "(per step below 60 steps), so slow drift widens it"
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
    return _result(
        config,
        device,
        prep,
        outcome,
        peak,
        tf_runtime.peak_memory(tf, device),
        warnings,
        env,
        name,
    )


def _default_batch(workload: Workload | None, device: tf_runtime.Device) -> int:
    if workload is None:
        return 256 if device.kind == "GPU" else 32
    return workload.default_batch_gpu if device.kind == "GPU" else workload.default_batch_cpu
