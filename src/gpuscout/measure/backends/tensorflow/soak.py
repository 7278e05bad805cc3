"""The soak job on TensorFlow: the workload's ``tf.function`` step, run by the shared soak
loop (:mod:`gpuscout.measure.soak_loop`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.diagnose.records import SoakConfig
from gpuscout.measure.backends.keras.weights import broken_weights
from gpuscout.measure.backends.tensorflow import backend as backend_tf
from gpuscout.measure.backends.tensorflow import runtime as tf_runtime
from gpuscout.measure.backends.tensorflow import train as tf_train
from gpuscout.measure.benchmark import check
from gpuscout.measure.protocol import BUILDING
from gpuscout.measure.soak_loop import soak_steps


def run_soak(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    config = SoakConfig.model_validate(payload)
    tf = tf_runtime.import_tensorflow()
    import keras

    bench_config = config.bench_config()
    workload, model_spec = check(bench_config)
    previous = keras.mixed_precision.global_policy()
    try:
        keras.utils.set_random_seed(config.seed)
        device = tf_runtime.resolve_device(tf, config.device)
        emit({"phase": BUILDING})
        prep = backend_tf.prepare(tf, bench_config, workload, model_spec, device)
        with tf.device(device.tf_name):
            step_on_batch = tf_train.train_step_function(
                tf, prep.built, config.precision, config.xla
            )

            @tf.function  # type: ignore[untyped-decorator]
            def train_step(iterator: Any) -> Any:
                x, y = next(iterator)
                return step_on_batch(x, y)

            iterator = iter(prep.dataset)

            def one_step() -> float:
                loss = float(train_step(iterator).numpy())
                tf_runtime.sync(tf, device)
                return loss

            record = soak_steps(config.minutes, one_step, emit)
            if not record["bad_losses"] and not record["error"]:
                record["broken_weights"] = broken_weights(prep.built.model)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return {
        "workload": config.model or config.workload,
        "device": device.name,
        "device_name": device.description,
        "batch_size": prep.batch_size,
        "assumptions": prep.assumptions,
        **record,
    }
