"""Cost profiles of training steps: computed once from HLO, then cached as JSON.

A profile depends only on the model, batch size and precision, so it is computed once (which
needs TensorFlow) and read back afterwards (which does not). Profiles of the built-in workloads
at their usual sizes ship with the package, so ``predict`` runs with no TensorFlow installed.

A profile also lists the step's kernels (``kernels``), and a shipped one knows how every number
in it grows with the batch (``per_sample``), so ``Profile.at_batch`` gives the exact profile at
any batch size without TensorFlow: each published measurement is modelled at its own batch
(ResNet-50 rows run 96 to 1,280 images per GPU). Every size in a training step's HLO is an
affine function of the batch (a dimension is the batch or it is not; bytes and FLOPs are sums
of such products, each with the batch at most once), so two traces at two batches determine it:
``profile_trace.compute(..., scale_from=...)`` traces the second one and stores the slopes per
sample. A test checks the rescaled profile against a real trace at a third batch, field for
field. Tracing (which needs a backend) is ``profile_trace.py``; this module reads and caches.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, model_validator

from gpuscout.predict.kernels import Kernel, merge

if TYPE_CHECKING:
    from gpuscout.predict.hlo import StepCost

# 2: kernels and per-sample scaling; a cached version-1 file is ignored (traced again).
PROFILE_VERSION = 2
# The HLO counting's revision, in every cached file's name, so a profile an older counting
# wrote is traced again rather than reused (2: while loops counted with their trip count;
# before, a recurrent layer's step was counted once; 3: the op-by-op kernels counted beside
# the fused ones, so an older cached profile, which lacks them, is traced again). The shipped
# profiles hold no while loop (their HLO was checked), so revisions 1 and 2 count them alike
# and they keep version 2; the decoder LLMs' were traced again for their op-by-op kernels.
COUNTING_REVISION = 3
# How a profile's method says its attention was traced as cuDNN's fused kernel (16-bit decoder
# LLM steps on JAX, see measure/backends/jax/fused_attention.py)
FUSED_ATTENTION = (
    "attention as cuDNN's fused (flash) kernel, as Keras on JAX runs it on Ampere and newer "
    "GPUs in 16-bit (FlashAttention-2's FLOP count, timed as a tensor-core matmul)"
)
# A kernel's growth per sample of batch, by size name (see ``PerSample``)
Slopes = dict[str, float]
# The numbers of a kernel that may depend on the batch (everything but op, dtype and count).
_KERNEL_SIZES = ("flops", "bytes", "batch", "m", "n", "k", "elements")

# How a profile's method says its kernels are the op-by-op ones (``Profile.as_op_by_op``)
OP_BY_OP = (
    "kernels counted op by op, as eager PyTorch runs a model written as tensor ops (no "
    "torch.compile): every elementwise and reduction op of the traced step its own kernel, "
    "reading its operands and writing its result; GEMMs and attention as when fused"
)

# A QLoRA base's bytes a weight: 4 bits plus ~6 % for the double-quantized constants
# (Dettmers et al. 2023, NF4): what ``memory`` holds and what FSDP gathers of such a base
QLORA_BYTES_PER_WEIGHT = 0.5 * 1.06


class PerSample(BaseModel):
    """How much each batch-dependent number of a profile grows per sample of batch: learnt
    from traces at two batch sizes, exact because every size in the step is affine in the
    batch. ``kernels[i]`` belongs to ``Profile.kernels[i]`` and names only the sizes that
    change (a weight's bytes do not; a GEMM's m over images and pixels does)."""

    model_config = ConfigDict(frozen=True)

    from_batches: tuple[int, int]
    flops: dict[str, float]
    bytes: dict[str, float]
    saved_activation_bytes: float
    kernels: list[dict[str, float]]
    recomputed_activation_bytes: float = 0.0
    op_by_op: list[dict[str, float]] = []  # ``op_by_op[i]`` belongs to ``Profile.op_by_op[i]``


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
    # Gradient checkpointing: what the backward pass recomputes and reads, all blocks
    # together (one block's share exists at a time, see predictor.memory_needed); 0 without
    recomputed_activation_bytes: float = 0.0
    # Weights read but not trained (LoRA's frozen base): no gradient, no optimizer state.
    frozen_bytes: int = 0
    method: str
    tf_version: str
    # "train": one training step (forward, backward, update); "forward": one inference call,
    # for ``predict --mode inference``
    kind: Literal["train", "forward"] = "train"
    # whose HLO was counted: TensorFlow's tf.function or JAX's jitted step (the shipped
    # profiles are TensorFlow's; ``predict --backend jax`` traces on JAX; a plain PyTorch
    # model's step is captured by PyTorch, ``measure/backends/torch/capture.py``; the
    # plain-PyTorch reference models' profiles are shipped under "/torch" keys)
    backend: Literal["tensorflow", "jax", "torch"] = "tensorflow"
    # The step's kernels after fusion, identical ones merged (see predict/kernels.py).
    kernels: list[Kernel] = []
    # The same step run op by op, nothing fused (``hlo_kernels.op_by_op_kernels``): how eager
    # PyTorch runs a model written as tensor ops; empty where it was not counted (the shipped
    # profiles carry it for the decoder LLMs only, see ``as_op_by_op``)
    op_by_op: list[Kernel] = []
    # Growth per sample of batch, for ``at_batch``; None: traced at one batch only.
    per_sample: PerSample | None = None
    # A while loop of unknown trip count was counted once: FLOPs, bytes and launches are at
    # least these (the method says so).
    flops_lower_bound: bool = False

    @model_validator(mode="after")
    def _aligned(self) -> Profile:
        if self.per_sample is not None and len(self.per_sample.kernels) != len(self.kernels):
            raise ValueError("per_sample.kernels must have one entry per kernel")
        if self.per_sample is not None and len(self.per_sample.op_by_op) != len(self.op_by_op):
            raise ValueError("per_sample.op_by_op must have one entry per op-by-op kernel")
        return self

    def at_batch(self, batch: int) -> Profile:
        """This step at another batch size, exactly, without TensorFlow.

        Raises ValueError for a profile traced at one batch only (user models, the cache) or
        for a batch at which a kernel would have no work left."""
        if batch == self.batch:
            return self
        if batch < 1:
            raise ValueError(f"batch {batch} is not a batch size; give 1 or more")
        if self.per_sample is None:
            raise ValueError(
                f"the profile of {self.key} was traced at one batch only; "
                "trace it at the batch wanted (compute) or with scale_from"
            )
        step = batch - self.batch
        grow = self.per_sample
        kernels = [
            _grown(k, slopes, step) for k, slopes in zip(self.kernels, grow.kernels, strict=True)
        ]
        op_by_op = [
            _grown(k, slopes, step) for k, slopes in zip(self.op_by_op, grow.op_by_op, strict=True)
        ]
        method = self.method if "rescaled" in self.method else f"{self.method}; rescaled"
        return self.model_copy(
            update={
                "batch": batch,
                "flops": {c: v + grow.flops.get(c, 0.0) * step for c, v in self.flops.items()},
                "bytes": {c: v + grow.bytes.get(c, 0.0) * step for c, v in self.bytes.items()},
                "saved_activation_bytes": self.saved_activation_bytes
                + grow.saved_activation_bytes * step,
                "recomputed_activation_bytes": self.recomputed_activation_bytes
                + grow.recomputed_activation_bytes * step,
                "kernels": kernels,
                "op_by_op": op_by_op,
                "method": method,
            }
        )

    def as_op_by_op(self) -> Profile:
        """This step as an eager stack runs a model written as tensor ops (Hugging Face's
        Llama with PEFT's LoRA, no ``torch.compile``): its op-by-op kernels in place of XLA's
        fused ones, every elementwise and reduction op reading its operands and writing its
        result. The FLOPs are the same; the bytes and launches are what running unfused adds.

        Raises ValueError for a profile counted without them (traced by an older gpuscout,
        or a shipped profile of a workload other than the decoder LLMs)."""
        if not self.op_by_op:
            raise ValueError(
                f"the profile of {self.key} has no op-by-op count (shipped for the decoder "
                "LLMs only; a step traced by this gpuscout has one)"
            )
        return self.model_copy(
            update={"kernels": self.op_by_op, "op_by_op": [], "per_sample": None,
                    "method": f"{self.method}; {OP_BY_OP}"}
        )  # fmt: skip

    @property
    def key(self) -> str:
        return profile_key(
            self.workload, self.dims, self.batch, self.precision, self.kind, self.backend
        )

    def gradient_bytes(self) -> int:
        """Bytes all-reduced per step: one gradient per parameter, in the variables' dtype."""
        return self.param_bytes


def memory_profile(profile: Profile, batch: int) -> Profile:
    """``profile`` with the activations it keeps at ``batch``: exact where it knows their
    growth per sample, else in proportion to the batch. For memory only (its kernels are not
    re-counted)."""
    if batch == profile.batch:
        return profile
    grow = profile.per_sample
    if grow is not None:
        step = batch - profile.batch
        saved = profile.saved_activation_bytes + grow.saved_activation_bytes * step
        again = profile.recomputed_activation_bytes + grow.recomputed_activation_bytes * step
    else:
        ratio = batch / profile.batch
        saved = profile.saved_activation_bytes * ratio
        again = profile.recomputed_activation_bytes * ratio
    return profile.model_copy(update={
        "batch": batch,
        "saved_activation_bytes": max(0.0, saved),
        "recomputed_activation_bytes": max(0.0, again),
    })  # fmt: skip


def _grown(kernel: Kernel, slopes: dict[str, float], step: int) -> Kernel:
    sizes = {}
    for name, slope in slopes.items():
        value = getattr(kernel, name) + slope * step
        sizes[name] = round(value) if name not in ("flops", "bytes") else float(value)
    if sizes.get("batch", 1) < 1 or any(v < 0 for v in sizes.values()):
        raise ValueError(f"a {kernel.op} kernel has no work left at {step:+d} samples of batch")
    # the checks above are the ones the sizes need (whole, none negative, a batch of one or
    # more); a copy skips re-validating every field, which a report's hundreds of rescaled
    # steps (an option's batch each) paid 0.6 s for
    return kernel.model_copy(update=sizes)


def learn_per_sample(
    batch: int, cost: StepCost, other_batch: int, other: StepCost
) -> tuple[list[Kernel], list[Kernel], PerSample]:
    """The merged kernels at ``batch`` (fused, and op by op) and their growth per sample, from
    the same step traced at two batches. The unmerged kernel lists align one to one (the
    program is the same, only its shapes differ); kernels identical at ``batch`` but growing
    differently stay apart.

    Raises ValueError when the two programs differ or a size is not affine in the batch (a
    growth per sample that is not a whole number): rescaling would then be a guess."""
    if batch == other_batch:
        raise ValueError(f"two different batches are needed, got {batch} twice")
    span = other_batch - batch

    def slope(a: float, b: float) -> float:
        per = (b - a) / span
        if not float(per).is_integer():
            raise ValueError(f"a size grows by {per} per sample: not affine in the batch")
        return per

    def grown(mine: list[Kernel], theirs: list[Kernel]) -> tuple[list[Kernel], list[Slopes]]:
        if [(k.op, k.dtype) for k in mine] != [(k.op, k.dtype) for k in theirs]:
            raise ValueError(f"the step's kernels differ between batch {batch} and {other_batch}")
        grows = [
            {
                name: slope(getattr(k, name), getattr(o, name))
                for name in _KERNEL_SIZES
                if getattr(k, name) != getattr(o, name)
            }
            for k, o in zip(mine, theirs, strict=True)
        ]
        keys: list[object] = [
            (k.key(), tuple(sorted(g.items()))) for k, g in zip(mine, grows, strict=True)
        ]
        first: dict[object, Slopes] = {}  # each merged kernel's slopes, in merge's order
        for key, grow in zip(keys, grows, strict=True):
            first.setdefault(key, grow)
        return merge(list(mine), keys), list(first.values())

    kernels, slopes = grown(cost.raw_kernels, other.raw_kernels)
    op_by_op, op_slopes = grown(cost.raw_op_by_op, other.raw_op_by_op)
    per_sample = PerSample(
        from_batches=(batch, other_batch),
        flops={c: slope(v, other.flops[c]) for c, v in cost.flops.items()},
        bytes={c: slope(v, other.bytes[c]) for c, v in cost.bytes.items()},
        saved_activation_bytes=slope(cost.saved_activation_bytes, other.saved_activation_bytes),
        kernels=slopes,
        recomputed_activation_bytes=slope(
            cost.recomputed_activation_bytes, other.recomputed_activation_bytes
        ),
        op_by_op=op_slopes,
    )
    return kernels, op_by_op, per_sample


def profile_key(
    workload: str, dims: Mapping[str, int], batch: int, precision: str, kind: str = "train",
    backend: str = "tensorflow",
) -> str:  # fmt: skip
    """The cache key; ``dims`` are resolved first, so defaults given or omitted match."""
    from gpuscout.workloads import get_workload

    suffix = ("" if kind == "train" else f"/{kind}") + (
        "" if backend == "tensorflow" else f"/{backend}"
    )
    if workload.startswith("model:"):  # a user's model: the name carries its file's hash
        return f"{workload}@b{batch}/{precision}{suffix}"
    resolved = get_workload(workload).resolve(dims)
    sizes = ",".join(f"{k}={v}" for k, v in sorted(resolved.items()))
    return f"{workload}[{sizes}]@b{batch}/{precision}{suffix}"


# The shipped profiles' files: the built-in workloads' (scripts/ship_profiles.py), and the
# plain-PyTorch decoder's captured steps at the published fine-tuning rows' shapes
# (scripts/ship_torch_llm_profiles.py, under "/torch" keys), apart so each script rewrites its own
SHIPPED_FILES = ("profiles.json", "profiles_torch_llm.json")


@functools.cache
def _shipped() -> dict[str, Profile]:
    """Read once per process: with their kernels the shipped profiles are megabytes of JSON."""
    found: dict[str, Profile] = {}
    for name in SHIPPED_FILES:
        path = Path(str(resources.files("gpuscout.predict") / "data" / name))
        if path.exists():
            found |= {p.key: p for p in map(Profile.model_validate, json.loads(path.read_text()))}
    return found


def cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("gpuscout")) / "profiles"


def cached(
    workload: str, dims: Mapping[str, int], batch: int, precision: str, kind: str = "train",
    backend: str = "tensorflow",
) -> Profile | None:  # fmt: skip
    """A shipped or previously computed profile, or None. A shipped profile of the same step
    at another batch is rescaled to this one (exact, see ``Profile.at_batch``)."""
    key = profile_key(workload, dims, batch, precision, kind, backend)
    shipped = _shipped()
    if key in shipped:
        return shipped[key]
    anybatch = _without_batch(key)
    for profile in shipped.values():
        if profile.per_sample is not None and _without_batch(profile.key) == anybatch:
            try:
                return profile.at_batch(batch)
            except ValueError:
                break
    path = _cache_path(key)
    try:
        found = Profile.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    return found if found.version == PROFILE_VERSION else None


def store(profile: Profile) -> None:
    """Cache a profile; an unwritable cache only costs recomputation."""
    path = _cache_path(profile.key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(profile.model_dump_json(indent=1))
        tmp.replace(path)
    except OSError:
        pass


def _cache_path(key: str) -> Path:
    return cache_dir() / f"{_filename(key)}.json"


def _without_batch(key: str) -> str:
    head, _, tail = key.rpartition("@b")
    return f"{head}@b*/{tail.partition('/')[2]}"


def _filename(key: str) -> str:
    """The cache file's name (without ``.json``): the key, and the counting's revision."""
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in key) + (
        f".r{COUNTING_REVISION}"
    )
