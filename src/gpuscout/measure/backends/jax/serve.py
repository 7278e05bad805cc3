"""``bench --mode inference`` on JAX: the model's forward pass (``stateless_call`` with
``training=False``) under ``jax.jit``, served in-process by :mod:`gpuscout.measure.serving`'s
closed-loop clients. Its one serving path is ``jax.jit``: a SavedModel is TensorFlow's format,
so ``--serving saved_model`` is refused before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpuscout.core.records import BenchConfig, RunResult
from gpuscout.core.run_settings import tf32_run_note
from gpuscout.measure import environment, latency
from gpuscout.measure.backends.jax import runtime as jax_runtime
from gpuscout.measure.backends.keras.serving import ServedModel
from gpuscout.measure.backends.keras.serving import load_for_serving as _load
from gpuscout.measure.protocol import BUILDING
from gpuscout.measure.serving import Request, plan_for, sweep
from gpuscout.measure.user_spec import ModelSpec, parse_model_spec
from gpuscout.workloads import Workload, get_workload

PATH = "jax.jit"


def load_for_serving(
    workload: str | Workload | None, model_spec: str | ModelSpec | None,
    dims: Mapping[str, int], seed: int,
) -> tuple[Any, Callable[[int], Any], ServedModel]:  # fmt: skip
    """The model and its inputs per batch (names are resolved here, for ``forward_hlo``)."""
    w = get_workload(workload) if isinstance(workload, str) else workload
    spec = parse_model_spec(model_spec) if isinstance(model_spec, str) else model_spec
    served = _load(w, spec, dims, seed, str(model_spec or ""))
    return served.model, served.inputs, served


def forward_function(jax: Any, model: Any) -> tuple[Any, Any]:
    """``forward(weights, x)`` under ``jax.jit``, and the model's weights (trainable and not)."""

    def forward(weights: Any, x: Any) -> Any:
        trainable, other = weights
        return model.stateless_call(trainable, other, x, training=False)[0]

    weights = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
    )
    return jax.jit(forward), weights


def run_inference(
    jax: Any,
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    device: jax_runtime.Device,
    on_phase: Callable[[str], None],
) -> RunResult:
    """Every point of the plan on ``device`` (the Keras policy was set by the caller)."""
    import keras

    p = plan_for(config, [PATH])
    assumptions = list(p.notes)
    on_phase(BUILDING)
    with jax.default_device(device.handle):
        model, inputs, served_model = load_for_serving(workload, model_spec, config.dims,
                                                       config.seed)  # fmt: skip
        forward, weights = forward_function(jax, model)
    assumptions += [
        served_model.note,
        "JAX backend: the forward pass (stateless_call, training=False) compiled by XLA under "
        "jax.jit; a request waits until its output is on the host (jax.device_get)",
    ]
    tf32 = jax_runtime.tf32_enabled(jax)
    if note := tf32_run_note(tf32, config.precision, device.kind, None):
        assumptions.append(note)

    def request_for(_path: str, batch: int) -> Request:
        x = jax.device_put(inputs(batch), device.handle)

        def request() -> None:
            jax.device_get(forward(weights, x))

        return request

    served = sweep(p, request_for, on_phase)
    env = {
        **environment.base_environment(),
        **jax_runtime.jax_environment(jax, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": True,
        "tf32_enabled": tf32,
        "workload_hash": served_model.workload_hash,
    }
    name = config.model if model_spec is not None and config.model else config.workload
    rows = [(s.path, s.batch, s.concurrency, s.latencies_s, s.seconds) for s in served]
    return latency.inference_result(
        config, device.name, name, rows, assumptions, env, jax_runtime.peak_memory(device)
    )
