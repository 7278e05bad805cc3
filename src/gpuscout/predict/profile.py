"""Cost profiles of training steps: computed once from HLO, then cached as JSON.

A profile depends only on the model, batch size and precision, so it is computed once (which
needs TensorFlow) and read back afterwards (which does not). Profiles of the built-in workloads
at their usual sizes ship with the package, so ``predict`` runs with no TensorFlow installed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict

PROFILE_VERSION = 1


class Profile(BaseModel):
    """FLOPs and bytes of one training step, by op class, and the sizes memory depends on."""

    model_config = ConfigDict(frozen=True)

    version: int = PROFILE_VERSION
    workload: str
    dims: dict[str, int]
    batch: int
    precision: str
    flops: dict[str, float]  # per step, by op class (matmul, elementwise, reduction)
    bytes: dict[str, float]  # estimated memory traffic per step, by op class
    params: int
    param_bytes: int
    optimizer_state_bytes: int
    saved_activation_bytes: float  # per step
    method: str
    tf_version: str
    # "train": one training step (forward, backward, update); "forward": one inference call,
    # for ``predict --mode inference``
    kind: Literal["train", "forward"] = "train"

    @property
    def key(self) -> str:
        return profile_key(self.workload, self.dims, self.batch, self.precision, self.kind)

    def gradient_bytes(self) -> int:
        """Bytes all-reduced per step: one gradient per parameter, in the variables' dtype."""
        return self.param_bytes


def profile_key(
    workload: str, dims: Mapping[str, int], batch: int, precision: str, kind: str = "train"
) -> str:
    """The cache key; ``dims`` are resolved first, so defaults given or omitted match."""
    from gpuscout.workloads import get_workload

    suffix = "" if kind == "train" else f"/{kind}"
    if workload.startswith("model:"):  # a user's model: the name carries its file's hash
        return f"{workload}@b{batch}/{precision}{suffix}"
    resolved = get_workload(workload).resolve(dims)
    sizes = ",".join(f"{k}={v}" for k, v in sorted(resolved.items()))
    return f"{workload}[{sizes}]@b{batch}/{precision}{suffix}"


def _shipped() -> dict[str, Profile]:
    path = Path(str(resources.files("gpuscout.predict") / "data" / "profiles.json"))
    if not path.exists():
        return {}
    return {p.key: p for p in (Profile.model_validate(d) for d in json.loads(path.read_text()))}


def cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("gpuscout")) / "profiles"


def cached(
    workload: str, dims: Mapping[str, int], batch: int, precision: str, kind: str = "train"
) -> Profile | None:
    """A shipped or previously computed profile, or None."""
    key = profile_key(workload, dims, batch, precision, kind)
    shipped = _shipped().get(key)
    if shipped is not None:
        return shipped
    path = cache_dir() / f"{_filename(key)}.json"
    try:
        found = Profile.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    return found if found.version == PROFILE_VERSION else None


def store(profile: Profile) -> None:
    """Cache a profile; an unwritable cache only costs recomputation."""
    path = cache_dir() / f"{_filename(profile.key)}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(profile.model_dump_json(indent=1))
        tmp.replace(path)
    except OSError:
        pass


def _filename(key: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in key)


def compute(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> Profile:
    """Trace the step with TensorFlow and count its HLO (seconds; no device time)."""
    from gpuscout.measure.backends.tensorflow.hlo import step_hlo
    from gpuscout.predict.hlo import step_cost
    from gpuscout.workloads import get_workload

    resolved = get_workload(workload).resolve(dims)
    ir = step_hlo(workload, resolved, batch, precision)
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    return profile_from_ir(workload, resolved, batch, precision, ir, cost)


def profile_from_ir(
    workload: str,
    dims: dict[str, int],
    batch: int,
    precision: str,
    ir: Any,
    cost: Any,
    kind: Literal["train", "forward"] = "train",
) -> Profile:
    method = (
        "XLA HLO of the tf.function train step (stage=hlo), dead code removed"
        if kind == "train"
        else "XLA HLO of the model's forward pass (training=False, stage=hlo)"
    )
    return Profile(
        kind=kind,
        workload=workload,
        dims=dims,
        batch=batch,
        precision=precision,
        flops=cost.flops,
        bytes=cost.bytes,
        params=ir.params,
        param_bytes=ir.param_bytes,
        optimizer_state_bytes=ir.optimizer_state_bytes,
        saved_activation_bytes=cost.saved_activation_bytes,
        method=method,
        tf_version=ir.tf_version,
    )


def user_model_name(model_spec: str) -> str:
    """'model:NAME:HASH' for a user's model: a changed file gets a new profile."""
    import hashlib

    from gpuscout.measure.user_spec import parse_model_spec

    path = parse_model_spec(model_spec).path
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"model:{model_spec}:{digest}"


def get_user_profile(model_spec: str, batch: int, precision: str) -> Profile:
    """The profile of a user's model, from the cache or traced (needs TensorFlow)."""
    name = user_model_name(model_spec)
    found = cached(name, {}, batch, precision)
    if found is None:
        from gpuscout.measure.backends.tensorflow.hlo import user_step_hlo
        from gpuscout.predict.hlo import step_cost

        ir = user_step_hlo(model_spec, batch, precision)
        cost = step_cost(ir.hlo, forward_scope=ir.model_name)
        found = profile_from_ir(name, {}, batch, precision, ir, cost)
        store(found)
    return found


def get_profile(workload: str, dims: Mapping[str, int], batch: int, precision: str) -> Profile:
    """The profile from the caches, else computed (needs TensorFlow) and cached."""
    found = cached(workload, dims, batch, precision)
    if found is None:
        found = compute(workload, dims, batch, precision)
        store(found)
    return found


def get_forward_profile(
    workload: str | None, model_spec: str | None, dims: Mapping[str, int], batch: int,
    precision: str,
) -> Profile:  # fmt: skip
    """The forward pass's profile (one inference call at ``batch``), cached after the first
    trace (which needs TensorFlow)."""
    from gpuscout.measure.backends.tensorflow.hlo import forward_hlo
    from gpuscout.predict.hlo import step_cost

    if model_spec is not None:
        name, resolved = user_model_name(model_spec), {}
    else:
        from gpuscout.workloads import get_workload

        assert workload is not None
        name, resolved = workload, get_workload(workload).resolve(dims)
    found = cached(name, resolved, batch, precision, "forward")
    if found is None:
        ir = forward_hlo(workload, model_spec, resolved, batch, precision)
        cost = step_cost(ir.hlo, forward_scope=ir.model_name)
        found = profile_from_ir(name, resolved, batch, precision, ir, cost, "forward")
        store(found)
    return found
