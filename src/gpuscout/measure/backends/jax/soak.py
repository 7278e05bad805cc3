"""The soak job on JAX: the jitted stateless step ``bench --backend jax`` times, run by the
shared soak loop (:mod:`gpuscout.measure.soak_loop`); each step's loss is fetched, so each
step has finished before the next is timed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.diagnose.records import SoakConfig
from gpuscout.measure import host_data
from gpuscout.measure.backends.jax import backend as backend_jax
from gpuscout.measure.backends.keras.weights import broken_arrays
from gpuscout.measure.benchmark import check
from gpuscout.measure.protocol import BUILDING
from gpuscout.measure.soak_loop import soak_steps


def run_soak(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    config = SoakConfig.model_validate(payload)
    bench_config = config.bench_config()
    workload, model_spec = check(bench_config)
    with backend_jax.session(bench_config) as jax:
        device = backend_jax.device_for(jax, bench_config)
        emit({"phase": BUILDING})
        t = backend_jax.prepare(jax, bench_config, workload, model_spec, device)
        box = [t.state]
        batches = backend_jax.batches_of(t)

        def one_step() -> float:
            x, y = next(batches)
            box[0], loss = t.step(box[0], x, y)
            jax.block_until_ready(box[0])
            return float(loss)

        try:
            record = soak_steps(config.minutes, one_step, emit)
        finally:
            host_data.close_iterator(batches)
        if not record["bad_losses"] and not record["error"]:  # a NaN the loss never showed
            record["broken_weights"] = broken_arrays([*box[0][0], *box[0][1]])
    return {
        "workload": config.model or config.workload,
        "device": device.name,
        "device_name": device.description,
        "batch_size": t.prep.batch_size,
        "assumptions": [*t.prep.assumptions, "JAX backend: the jitted stateless step, as bench's"],
        **record,
    }
