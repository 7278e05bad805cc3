"""Profiles that need a backend: a step traced with TensorFlow or JAX and its HLO counted.

Only here does ``predict`` reach a backend, and only when no shipped or cached profile
(``profile.py``) answers; each traced profile is cached for the next time. A user's ``--model``
is traced in the measuring child, bounded in time and memory, as ``bench`` runs it
(``measure/trace_child.py``): its builder is the user's code, which may exit, hang or
``chdir``; a built-in workload's step is gpuscout's own, traced here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from gpuscout.predict.profile import (
    FUSED_ATTENTION,
    Profile,
    cached,
    learn_per_sample,
    store,
)
from gpuscout.workloads.llm import LLAMA_NAMES

if TYPE_CHECKING:
    from gpuscout.measure.backends.protocol import Backend


def compute(
    workload: str,
    dims: Mapping[str, int],
    batch: int,
    precision: str,
    scale_from: int | None = None,
    backend: str = "tensorflow",
) -> Profile:
    """Trace the step with TensorFlow (or JAX) and count its HLO (seconds; no device time).

    ``scale_from``: a second batch to trace too, so the profile learns how it grows with the
    batch and ``at_batch`` works (twice the time; the shipped profiles do it)."""
    from gpuscout.predict.hlo import step_cost
    from gpuscout.workloads import get_workload

    resolved = get_workload(workload).resolve(dims)
    backend = tracing_backend(workload, backend)
    if backend == "jax" and workload in LLAMA_NAMES:
        step_hlo = tracer(backend).trace_abstract_step
    else:
        if resolved.get("checkpointing"):
            from gpuscout.core.errors import UserError

            raise UserError(
                f"--checkpointing: {workload}'s checkpointed step is traced on JAX, which is "
                "not installed.",
                "pip install 'gpuscout[jax]', or drop --checkpointing.",
            )
        import psutil

        from gpuscout.core.limits import check_fits_host

        # Tracing builds the model, weights and optimizer state included, in this memory
        check_fits_host(workload, resolved, precision, psutil.virtual_memory().available,
                        "JAX traces it from shapes alone, without its weights: pip install "
                        "'gpuscout[jax]', or predict a smaller --workload.")  # fmt: skip
        step_hlo = tracer(backend).trace_step
    ir = step_hlo(workload, resolved, batch, precision)
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    profile = profile_from_ir(workload, resolved, batch, precision, ir, cost)
    if scale_from is None:
        return profile
    other_ir = step_hlo(workload, resolved, scale_from, precision)
    other = step_cost(other_ir.hlo, forward_scope=other_ir.model_name)
    kernels, op_by_op, per_sample = learn_per_sample(batch, cost, scale_from, other)
    return profile.model_copy(
        update={"kernels": kernels, "op_by_op": op_by_op, "per_sample": per_sample}
    )


def compute_from_module(
    workload: str,
    dims: Mapping[str, int],
    model_spec: str,
    batch: int,
    precision: str,
    scale_from: int,
    backend: str = "torch",
) -> Profile:
    """A built-in workload's profile traced from ``model_spec``, a module that builds the same
    network in another framework (``examples/models/torch_resnet50.py:build`` for
    ``resnet50-v1.5``), traced as a user's model is (``measure/trace_child.py``) at ``batch``
    and ``scale_from``, and kept under the workload's key with ``backend`` in it ("/torch"):
    the published rows measured on PyTorch can then be modelled from PyTorch's own step
    (``calibration_points.published_points(pytorch_traced="torch")``). Whether the module is
    that workload is its tests' claim (parameters and FLOPs), not checked here."""
    from gpuscout.measure.trace_child import trace_user_step
    from gpuscout.predict.hlo import step_cost
    from gpuscout.workloads import get_workload

    resolved = get_workload(workload).resolve(dims)
    irs = [trace_user_step(model_spec, "train", b, precision, backend) for b in (batch, scale_from)]
    costs = [step_cost(ir.hlo, forward_scope=ir.model_name) for ir in irs]
    profile = profile_from_ir(workload, resolved, batch, precision, irs[0], costs[0])
    kernels, op_by_op, per_sample = learn_per_sample(batch, costs[0], scale_from, costs[1])
    method = f"{profile.method}; traced from {model_spec} on {backend} ({irs[0].tf_version})"
    return profile.model_copy(update={
        "kernels": kernels, "op_by_op": op_by_op, "per_sample": per_sample,
        "backend": backend, "method": method,
    })  # fmt: skip


def profile_from_ir(
    workload: str,
    dims: dict[str, int],
    batch: int,
    precision: str,
    ir: Any,
    cost: Any,
    kind: Literal["train", "forward"] = "train",
) -> Profile:
    from gpuscout.predict.hlo import loops_note

    on_jax = str(ir.tf_version).startswith("jax")
    on_torch = str(ir.tf_version).startswith("torch")
    abstract = " from shapes alone (no weight allocated)" if (
        on_jax and workload in LLAMA_NAMES) else ""  # fmt: skip
    method = (
        (f"XLA HLO of the jitted JAX train step (lowered for CUDA){abstract}" if on_jax
         else "XLA HLO of the tf.function train step (stage=hlo), dead code removed")
        if kind == "train"
        else "XLA HLO of the model's forward pass (training=False"
        + (", jitted on JAX)" if on_jax else ", stage=hlo)")
    )  # fmt: skip
    if on_torch:  # how the step was captured and what that assumed, said by the capture
        method = (
            ir.notes if kind == "train" else f"the model's forward pass (eval, no_grad): {ir.notes}"
        )
    from gpuscout.core.step_ir import FUSED_ATTENTION_FORWARD

    if FUSED_ATTENTION_FORWARD in ir.hlo:
        method += f"; {FUSED_ATTENTION}"
    if dims.get("checkpointing") and on_torch:
        method += (
            "; gradient checkpointing: each block under torch.utils.checkpoint, its input "
            "kept and its forward recomputed in the backward pass"
        )
    elif dims.get("checkpointing"):
        method += (
            "; gradient checkpointing: each block's input and the logits kept, the blocks "
            "recomputed in the backward pass (jax.checkpoint)"
        )
    loops = loops_note(cost)
    return Profile(
        kind=kind,
        backend="jax" if on_jax else "torch" if on_torch else "tensorflow",
        workload=workload,
        dims=dims,
        batch=batch,
        precision=precision,
        flops=cost.flops,
        bytes=cost.bytes,
        params=ir.params,
        param_bytes=ir.param_bytes,
        optimizer_state_bytes=ir.optimizer_state_bytes,
        frozen_bytes=ir.frozen_bytes,
        saved_activation_bytes=cost.saved_activation_bytes,
        recomputed_activation_bytes=cost.recomputed_activation_bytes,
        kernels=cost.kernels,
        op_by_op=cost.op_by_op,
        method=f"{method}; {loops}" if loops else method,
        tf_version=ir.tf_version,
        flops_lower_bound=cost.flops_lower_bound,
    )


def user_model_name(model_spec: str) -> str:
    """'model:NAME:HASH' for a user's model: a changed file gets a new profile."""
    import hashlib

    from gpuscout.measure.user_spec import parse_model_spec

    path = parse_model_spec(model_spec).path
    with path.open("rb") as handle:  # in chunks: a .keras file of weights may be gigabytes
        digest = hashlib.file_digest(handle, "sha256").hexdigest()[:12]
    return f"model:{model_spec}:{digest}"


def tracing_backend(workload: str, backend: str) -> str:
    """Where ``workload``'s profile is traced: a decoder LLM on JAX, from shapes, whatever
    the run's backend, where JAX is installed (TensorFlow would build every weight: 32 GB of
    float32 for an 8B model before the step is traced); every other workload on ``backend``."""
    import importlib.util

    if workload not in LLAMA_NAMES:
        return backend
    try:
        return "jax" if importlib.util.find_spec("jax") is not None else backend
    except ImportError:  # an import hook that refuses JAX: as good as not installed
        return backend


def tracer(backend: str) -> Backend:
    """The backend that traces steps (``trace_step``, ``trace_user_step``, ``trace_forward``),
    through the backend protocol: predict imports no backend's package."""
    from gpuscout.measure.backends import get

    return get(backend)


def get_user_profile(
    model_spec: str, batch: int, precision: str, backend: str = "tensorflow",
    compiled: bool = False,
) -> Profile:  # fmt: skip
    """The profile of a user's model, from the cache or traced (needs the backend); a plain
    PyTorch model's as eager PyTorch runs it, or (``compiled``) as ``torch.compile`` would."""
    name = user_model_name(model_spec)
    found = cached(name, {}, batch, precision, backend=backend)
    if found is None:
        from gpuscout.measure.trace_child import trace_user_step
        from gpuscout.predict.hlo import step_cost

        ir = trace_user_step(model_spec, "train", batch, precision, backend)
        cost = step_cost(ir.hlo, forward_scope=ir.model_name)
        found = profile_from_ir(name, {}, batch, precision, ir, cost)
        store(found)
    return eager(found, compiled)


# How a captured PyTorch step's method says it is predicted compiled (``predict --compile``)
COMPILED = (
    "compiled (torch.compile): the captured step's kernels fused as XLA's GPU fusion fuses "
    "them, gpuscout's stand-in for Inductor's fusion (not run here): each loop fusion of "
    "elementwise ops, and each reduction with the ops it takes in, one kernel"
)


def eager(profile: Profile, compiled: bool = False) -> Profile:
    """A captured PyTorch step as eager PyTorch runs it: its op-by-op kernels (one an aten op),
    not the fused ones the same profile holds for a compiled step; ``compiled``: the fused
    ones, said in its method. Any other step as it is."""
    if profile.backend != "torch":
        return profile
    if compiled:
        return profile.model_copy(update={"method": f"{profile.method}; {COMPILED}"})
    return profile.as_op_by_op() if profile.op_by_op else profile


def get_profile(
    workload: str, dims: Mapping[str, int], batch: int, precision: str,
    backend: str = "tensorflow",
) -> Profile:  # fmt: skip
    """The profile from the caches, else computed (needs the backend) and cached. A decoder
    LLM's shipped profile was traced on JAX: it is read whether JAX is installed or not."""
    found = None
    if workload in LLAMA_NAMES:
        found = cached(workload, dims, batch, precision, backend="jax")
    found = found or cached(workload, dims, batch, precision, backend=backend)
    if found is None:
        found = compute(workload, dims, batch, precision, backend=backend)
        store(found)
    return found


def get_forward_profile(
    workload: str | None, model_spec: str | None, dims: Mapping[str, int], batch: int,
    precision: str, backend: str = "tensorflow", compiled: bool = False,
) -> Profile:  # fmt: skip
    """The forward pass's profile (one inference call at ``batch``), cached after the first
    trace (which needs the backend); a PyTorch step eager or ``compiled`` as above."""
    from gpuscout.predict.hlo import step_cost

    if model_spec is not None:
        name, resolved = user_model_name(model_spec), {}
    else:
        from gpuscout.workloads import get_workload

        assert workload is not None
        name, resolved = workload, get_workload(workload).resolve(dims)
    found = cached(name, resolved, batch, precision, "forward", backend)
    if found is None:
        if model_spec is not None:
            from gpuscout.measure.trace_child import trace_user_step

            ir = trace_user_step(model_spec, "forward", batch, precision, backend)
        else:
            ir = tracer(backend).trace_forward(workload, None, resolved, batch, precision)
        cost = step_cost(ir.hlo, forward_scope=ir.model_name)
        found = profile_from_ir(name, resolved, batch, precision, ir, cost, "forward")
        store(found)
    return eager(found, compiled)
