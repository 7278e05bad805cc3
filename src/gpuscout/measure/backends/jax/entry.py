"""JAX's side of the backend protocol (``measure/backends/protocol.py``): each function imports
the module of this package that does the work, when it is called."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuscout.core.records import RunResult
from gpuscout.core.step_ir import StepIR
from gpuscout.measure.backends.protocol import Emit
from gpuscout.measure.job import Job


def start_process() -> None:
    import jax  # noqa: F401  (ImportError here: the caller says what to install)


def run(job: Job) -> RunResult:
    from gpuscout.measure.backends.jax import backend

    return backend.run(job)


def trace_step(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> StepIR:
    from gpuscout.measure.backends.jax import hlo

    return hlo.step_hlo(workload, dims, batch, precision)


def trace_abstract_step(
    workload: str, dims: Mapping[str, int], batch: int, precision: str
) -> StepIR:
    from gpuscout.measure.backends.jax import hlo

    return hlo.abstract_step_hlo(workload, dims, batch, precision)


def trace_user_step(model_spec: str, batch: int, precision: str) -> StepIR:
    from gpuscout.measure.backends.jax import hlo

    return hlo.user_step_hlo(model_spec, batch, precision)


def trace_forward(
    workload: str | None, model_spec: str | None, dims: Mapping[str, int], batch: int,
    precision: str,
) -> StepIR:  # fmt: skip
    from gpuscout.measure.backends.jax import hlo

    return hlo.forward_hlo(workload, model_spec, dims, batch, precision)


def trace_live_step(model: Any, batch: int, precision: str) -> StepIR:
    from gpuscout.measure.backends.jax import hlo

    return hlo.live_step_hlo(model, batch, precision)


def doctor(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from gpuscout.measure.backends.jax.doctor import diagnose_here

    return diagnose_here(payload, emit)


def soak(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from gpuscout.measure.backends.jax.soak import run_soak

    return run_soak(payload, emit)


def tf32_enabled() -> bool:
    from gpuscout.measure.backends.jax import runtime

    return bool(runtime.tf32_enabled(runtime.import_jax()))


def fit_device() -> tuple[str, str]:
    from gpuscout.measure.backends.jax import runtime

    device = runtime.resolve_device(runtime.import_jax(), None)
    return device.name, device.description
