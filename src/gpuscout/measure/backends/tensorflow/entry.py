"""TensorFlow's side of the backend protocol (``measure/backends/protocol.py``): each function
imports the module of this package that does the work, when it is called."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult
from gpuscout.core.step_ir import StepIR
from gpuscout.measure.backends.protocol import Emit
from gpuscout.measure.job import Job


def start_process() -> None:
    from gpuscout.measure.backends.tensorflow.runtime import import_tensorflow

    import_tensorflow()  # before the job's modules import Keras: chatter hidden


def run(job: Job) -> RunResult:
    from gpuscout.measure.backends.tensorflow import backend

    return backend.run(job)


def trace_step(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    from gpuscout.measure.backends.tensorflow import hlo

    return hlo.step_hlo(workload, dims, batch, precision)


def trace_abstract_step(
    workload: str, dims: Mapping[str, int], batch: int, precision: str
) -> StepIR:
    raise UserError(
        f"{workload} is traced from shapes alone on JAX, which is not installed.",
        "pip install 'gpuscout[jax]'.",
    )


def trace_user_step(model_spec: str, batch: int, precision: str) -> StepIR:
    from gpuscout.measure.backends.tensorflow import hlo

    return hlo.user_step_hlo(model_spec, batch, precision)


def trace_forward(
    workload: str | None, model_spec: str | None, dims: Mapping[str, int], batch: int,
    precision: str,
) -> StepIR:  # fmt: skip
    from gpuscout.measure.backends.tensorflow import hlo

    return hlo.forward_hlo(workload, model_spec, dims, batch, precision)


def trace_live_step(model: Any, batch: int, precision: str) -> StepIR:
    from gpuscout.measure.backends.tensorflow import hlo

    return hlo.live_step_hlo(model, batch, precision)


def doctor(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from gpuscout.measure.backends.tensorflow.doctor_run import diagnose_here

    return diagnose_here(payload, emit)


def soak(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from gpuscout.measure.backends.tensorflow.soak import run_soak

    return run_soak(payload, emit)


def tf32_enabled() -> bool:
    import tensorflow as tf

    return bool(tf.config.experimental.tensor_float_32_execution_enabled())


def fit_device() -> tuple[str, str]:
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        name = gpus[0].name.split("device:")[-1]
        details = tf.config.experimental.get_device_details(
            tf.config.list_physical_devices("GPU")[0]
        )
        return name, str(details.get("device_name", "GPU"))
    from gpuscout.measure.environment import cpu_model

    return "CPU:0", cpu_model()
