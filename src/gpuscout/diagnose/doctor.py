"""``doctor``: where a training loop's time goes, and what each fix is measured to gain.

:func:`diagnose` is the public entry. It checks the request without TensorFlow, then runs
the trials in a measuring child (``measure/backends/tensorflow/doctor_run``), so that an
out-of-memory crash during the batch search cannot take the command down, while the parent's
device monitor watches; the monitor's windows give the device-busy fraction of the training
loop and the CPU's busiest core while only the data pipeline ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.diagnose.records import DoctorConfig, DoctorReport
from gpuscout.errors import GpuscoutError, UserError, did_you_mean
from gpuscout.measure.runner import STALL_S, run_child
from gpuscout.measure.user_spec import parse_function_spec, parse_model_spec
from gpuscout.workloads import get_workload

FIXES = ("prefetch", "parallel map", "cache", "mixed precision", "XLA", "tf.function", "batch size")
CODE = {
    "prefetch": "dataset = dataset.prefetch(tf.data.AUTOTUNE)  # the pipeline's last step",
    "parallel map": "dataset = dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE, "
    "deterministic=False)",
    "cache": "dataset = dataset.cache()  # after deterministic preprocessing, before shuffle "
    "and random augmentation",
    "mixed_float16": 'keras.mixed_precision.set_global_policy("mixed_float16")  # before '
    'building the model; output layer dtype="float32"; model.compile adds loss scaling',
    "mixed_bfloat16": 'keras.mixed_precision.set_global_policy("mixed_bfloat16")  # before '
    'building the model; output layer dtype="float32"; no loss scaling needed',
    "XLA": "model.compile(..., jit_compile=True)  # or @tf.function(jit_compile=True) on your "
    "train step",
    "tf.function": "@tf.function  # model.fit does this for you\ndef train_step(x, y): ...",
}
GIL_NOTE = (
    "did not help: if the map calls Python (tf.numpy_function, tf.py_function), parallel "
    "calls queue on Python's GIL; express the preprocessing in TensorFlow ops instead"
)
WINDOW_LABELS = {"data": "the data pipeline alone", "together": "the baseline training loop"}


def check(config: DoctorConfig) -> None:
    """Everything checkable without TensorFlow; UserError if bad."""
    if config.backend == "jax":
        raise UserError(
            "doctor does not take --backend jax: it times a tf.data input pipeline against the "
            "step, and its fixes (prefetch, parallel map, cache, tf.function) are TensorFlow's.",
            "diagnose with --backend tensorflow; measure JAX with bench or soak --backend jax.",
        )
    if config.model:
        parse_model_spec(config.model)
    else:
        get_workload(config.workload).resolve(config.dims)
    if config.data:
        if not config.model:
            raise UserError("--data needs --model.", "pass --model FILE.py:FUNCTION with it.")
        parse_function_spec(config.data, "--data")
    for name in config.skip:
        if name not in FIXES:
            raise UserError(
                f"--skip '{name}' is not a fix doctor tries.{did_you_mean(name, FIXES)}",
                f"use one of: {', '.join(FIXES)}.",
            )


def diagnose(
    config: DoctorConfig,
    on_phase: Callable[[str], None] | None = None,
    stall_s: float = STALL_S,
) -> DoctorReport:
    """Run the diagnosis in a monitored child process and return its report."""
    check(config)

    def relay(message: dict[str, Any]) -> None:
        if "phase" in message and on_phase:
            on_phase(message["phase"])

    run = run_child("doctor", config.model_dump(mode="json"), config.device, relay, stall_s)
    if run.monitor is not None:
        run.monitor.stop()
    final = run.final
    if "user_error" in final:
        raise UserError(final["user_error"], final.get("fix"))
    if "error" in final or "report" not in final:
        raise GpuscoutError(f"doctor could not finish: {final.get('error') or run.failure}")
    report = DoctorReport.model_validate(final["report"])
    if run.monitor is None:
        return report
    together = run.windows.get(WINDOW_LABELS["together"])
    data = run.windows.get(WINDOW_LABELS["data"])
    gpu_busy = together.gpus[0].utilization_mean if together and together.gpus else None
    analysis = report.analysis.model_copy(
        update={
            "device_busy_fraction": gpu_busy,
            "busiest_core_data": data.cpu_busiest_core_mean if data else None,
        }
    )
    return report.model_copy(update={"analysis": analysis, "monitor": run.monitor.summary()})
