"""The TensorFlow side of ``bench --mode inference``: build the model and its inputs on the
device, serve them (``inference``), and compose the stored run (``latency``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, RunResult
from gpuscout.core.run_settings import tf32_run_note
from gpuscout.measure import environment, latency
from gpuscout.measure.backends.keras.serving import load_for_serving
from gpuscout.measure.backends.tensorflow import inference as tf_inference
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.measure.protocol import BUILDING
from gpuscout.measure.serving import plan_for
from gpuscout.measure.user_spec import ModelSpec
from gpuscout.workloads import Workload


def run_inference(
    tf: Any,
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    device: tf_runtime.Device,
    on_phase: Callable[[str], None],
) -> RunResult:
    import keras

    keras.mixed_precision.set_global_policy(
        "float32" if config.precision == "fp32" else config.precision
    )
    p = plan_for(config, tf_inference.PATHS[config.serving])
    assumptions = list(p.notes)
    on_phase(BUILDING)
    with tf.device(device.tf_name):
        served_model = load_for_serving(workload, model_spec, config.dims, config.seed,
                                        config.model or "")  # fmt: skip
    model, inputs = served_model.model, served_model.inputs
    if model_spec is not None and len(model.inputs) > 1 and "saved_model" in p.paths:
        raise UserError(
            f"--serving saved_model takes models with one input; this one has {len(model.inputs)}.",
            "use --serving function for it.",
        )
    assumptions.append(served_model.note)
    if config.xla:
        assumptions.append("XLA: the tf.function path is compiled (jit_compile); a SavedModel "
                           "is served as exported")  # fmt: skip
    if device.kind == "GPU":
        assumptions.append(tf_runtime.MEMORY_GROWTH_NOTE)
    tf32 = tf_runtime.tf32_environment(tf, device)  # the switch backend.run set
    if note := tf32_run_note(
        bool(tf32["tf32_enabled"]), config.precision, device.kind, device.compute_capability
    ):
        assumptions.append(note)
    tf_runtime.reset_peak_memory(tf, device)
    served = tf_inference.serve(tf, model, inputs, p, config.xla, device.tf_name, on_phase)
    env = {
        **environment.base_environment(),
        **tf_runtime.tf_environment(tf, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": config.xla,
        **tf32,
        "workload_hash": served_model.workload_hash,
    }
    name = config.model if model_spec is not None and config.model else config.workload
    rows = [(s.path, s.batch, s.concurrency, s.latencies_s, s.seconds) for s in served]
    return latency.inference_result(
        config, device.name, name, rows, assumptions, env, tf_runtime.peak_memory(tf, device)
    )
