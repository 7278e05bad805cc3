"""The TensorFlow side of ``bench --mode inference``: build the model and its inputs on the
device, serve them (``inference``), and compose the stored run (``latency``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuscout.errors import UserError
from gpuscout.measure import environment, latency
from gpuscout.measure.backends.tensorflow import inference as tf_inference
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.measure.protocol import BUILDING
from gpuscout.measure.synthetic import arrays
from gpuscout.measure.user_spec import ModelSpec
from gpuscout.records import BenchConfig, RunResult
from gpuscout.run_settings import tf32_run_note
from gpuscout.workloads import Workload

DEFAULT_BATCH_SIZES = [1, 8, 32]


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
    assumptions: list[str] = []
    batch_sizes = config.batch_sizes or DEFAULT_BATCH_SIZES
    if not config.batch_sizes:
        assumptions.append(f"batch sizes {batch_sizes}: the default (set --batch-sizes)")
    p = tf_inference.plan(
        batch_sizes, config.concurrency or [1], config.serving, config.seconds or 60.0
    )
    assumptions += p.notes
    on_phase(BUILDING)
    with tf.device(device.tf_name):
        if model_spec is not None:
            from gpuscout.measure.backends.tensorflow import user_model as tf_user

            model = tf_user.load_model(model_spec)
            if len(model.inputs) > 1 and "saved_model" in p.paths:
                raise UserError(
                    "--serving saved_model takes models with one input; this one has "
                    f"{len(model.inputs)}.",
                    "use --serving function for it.",
                )
            loss = tf_user.prepare_user_model(model)[0].loss
            rng = np.random.default_rng(config.seed)

            def inputs(batch: int) -> Any:
                x, _, _ = tf_user.synthetic_user_batch(model, loss, batch, rng)
                return x[0] if len(x) == 1 else list(x)

            workload_hash = environment.hash_parts(model_spec.path.read_bytes(), config.model or "")
            assumptions.append("inputs: random, shaped and typed as the model's inputs")
        else:
            assert workload is not None
            from gpuscout.measure.backends.keras.models import BUILDERS

            dims = workload.resolve(config.dims)
            model = BUILDERS[workload.name](dims).model

            def inputs(batch: int) -> Any:
                return arrays(workload, dims, batch, config.seed)[0]

            workload_hash = environment.hash_parts(
                workload.name, repr(sorted(dims.items())),
                inspect.getsource(BUILDERS[workload.name]),
            )  # fmt: skip
            assumptions.append("inputs: random, shaped and typed as the workload's")
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
        "workload_hash": workload_hash,
    }
    name = config.model if model_spec is not None and config.model else config.workload
    rows = [(s.path, s.batch, s.concurrency, s.latencies_s, s.seconds) for s in served]
    return latency.inference_result(
        config, device.name, name, rows, assumptions, env, tf_runtime.peak_memory(tf, device)
    )
