"""``predict``: training speed of a workload on catalog GPUs, 1..N of them, with a range.

Pipeline: the step's cost profile and its kernels (``profile.py``) -> single-GPU time as the
sum of its kernels, each timed by the kernel model learned from measured kernels
(``kernel_model.py``, ``roofline.py``) with what kernels cannot know fitted to published
end-to-end measurements (``calibrate.py``) -> optionally
scaled by your measured runs of the step (``anchoring.py``) -> data-parallel scaling
(``scaling.py``) -> memory fit -> which options are closer than the model's out-of-sample
error (``ranking.py``). Every assumption behind a number is returned with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gpuscout.catalog import Catalog, Gpu, peak_tflops
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.core.errors import UserError
from gpuscout.predict import ranking, scaling
from gpuscout.predict.calibrate import Calibration
from gpuscout.predict.efficiency import Efficiency
from gpuscout.predict.kernel_model import GpuFeatures
from gpuscout.predict.profile import QLORA_BYTES_PER_WEIGHT, Profile, memory_profile
from gpuscout.predict.roofline import ESTIMATED, StepEstimate, grown_step, step_time
from gpuscout.predict.stacks import StackLevel
from gpuscout.predict.uncertainty import band, relative_error

if TYPE_CHECKING:
    from gpuscout.predict.anchoring import Anchors


@dataclass
class Prediction:
    gpu: str
    gpu_name: str
    count: int  # GPUs in all
    nodes: int
    samples_per_second: float
    low: float
    high: float
    epoch_seconds: float
    relative_speed: float
    scaling_efficiency: float
    fits_memory: bool
    memory_needed_gb: float
    link: str | None
    method: str
    measured: float | None = None  # samples/s of your stored runs of this GPU and count
    measured_scaling: float | None = None  # scaling efficiency your --scaling runs measured
    assumptions: list[str] = field(default_factory=list)
    tf32: bool = True  # float32 matmuls on TF32 tensor cores where a GPU has them; --no-tf32
    # one GPU's step, in seconds: in compute-, memory- and launch-bound kernels, and the
    # framework's cost per step ("step"); kernels launched per step
    split: dict[str, float] = field(default_factory=dict)
    launches: int = 0
    # one GPU's step per kernel class (matmul, conv, elementwise, reduction): seconds, FLOPs,
    # bytes moved and the roofline floor, so the implied bandwidth can be recomputed
    classes: dict[str, dict[str, float]] = field(default_factory=dict)
    # the next slower option (same GPU count) the model cannot tell this one from, out of sample
    not_distinguishable_from: str | None = None
    # where the step does not fit: what would make it fit, estimated (predict/fit_options.py)
    fits_with: list[dict[str, Any]] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


def runs_said(ids: Sequence[int], stored: bool = False) -> str:
    """ "run 1", "runs 1, 2, 3", at most ten ids then "and N more"; "this run" for a run not
    stored (ScoutCallback with keep=False)."""
    if not ids:
        return "this run"
    shown = ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return f"{'your stored ' if stored else ''}run{'s' * (len(ids) > 1)} {shown}"


def memory_parts(profile: Profile) -> dict[str, float]:
    """Bytes by part: weights (frozen ones apart), gradients and optimizer state of the
    trained ones, and the activations kept for backward (with gradient checkpointing, plus one
    block's recomputed ones); for a forward pass, the weights and what it keeps (its transient
    buffers are not counted). ``memory`` prints these; ``predict`` compares their sum."""
    if profile.kind == "forward":
        return {"weights": float(profile.param_bytes),
                "activations": profile.saved_activation_bytes}  # fmt: skip
    # checkpointed: one block's recomputed activations exist at a time, beside what is kept
    recomputing = profile.recomputed_activation_bytes / max(1, profile.dims.get("layers", 1))
    parts = {"frozen weights": float(profile.frozen_bytes)} if profile.frozen_bytes else {}
    return parts | {
        "weights": float(profile.param_bytes),
        "gradients": float(profile.param_bytes),
        "optimizer state": float(profile.optimizer_state_bytes),
        "activations": profile.saved_activation_bytes + recomputing,
    }


def sharded_weight_bytes(profile: Profile, four_bit_base: bool = False) -> float:
    """Bytes of the weights FSDP or ZeRO-3 all-gathers for compute: the trained ones in 16 bits
    under mixed precision (float32 otherwise) and the frozen base as stored, in 4 bits for
    QLoRA (``profile.QLORA_BYTES_PER_WEIGHT``, the constant ``memory`` uses)."""

    element = 2 if profile.precision.startswith("mixed") else 4
    frozen = float(profile.frozen_bytes)
    if four_bit_base and frozen:
        frozen = frozen / element * QLORA_BYTES_PER_WEIGHT
    return profile.params * element + frozen


def memory_needed(profile: Profile) -> float:
    """Bytes the step needs on the GPU: the sum of ``memory_parts``."""
    return float(sum(memory_parts(profile).values()))


def predict(
    profile: Profile,
    gpus: Sequence[Gpu],
    counts: Sequence[int | tuple[int, int]],
    catalog: Catalog,
    reference: Gpu,
    epoch_samples: int,
    *,
    calibration: Calibration,
    level: StackLevel,
    anchors: Anchors | None = None,
    measured: dict[tuple[str, int], float] | None = None,
    measured_scaling: dict[tuple[str, int], float] | None = None,
    network_gbit: float = scaling.DEFAULT_NETWORK_GBIT,
    tf32: bool = True,
    sharded: bool = False,
    four_bit_base: bool = False,
    batch: int | None = None,
) -> tuple[list[Prediction], list[str]]:
    """One prediction per GPU and count, and the assumptions common to all of them. Called by
    the session (``session.py``), which holds the calibration, the ``--stack`` level and your
    stored runs (``anchors``: the measured GPUs this step is anchored on).

    A count is a number of GPUs in one machine, or (nodes, GPUs per node). ``measured`` and
    ``measured_scaling`` are keyed by (GPU id, GPU count in one machine). ``tf32``: float32
    matmuls on TF32 tensor cores (TensorFlow's default) or, False, on CUDA cores (``--no-tf32``,
    PyTorch's default); it changes nothing for mixed precision's FP16/BF16 matmuls.
    ``sharded``: the weights are sharded over the GPUs (FSDP, ZeRO-3) and all-gathered twice a
    step (``scaling.step_seconds``); memory is still the unsharded step's. ``four_bit_base``:
    QLoRA's frozen base, all-gathered in 4 bits (its dequantization is not predicted).
    ``batch``: the batch per GPU to predict at where the profile, traced at another, cannot
    be re-counted at it (a user's model): its step estimated from its split
    (``batch_size.grown_step``); ``Session.predict`` re-counts a built-in workload's exactly.
    """
    at = profile.batch if batch is None else batch
    if at < 1:
        raise UserError(f"batch {at} is not a batch size.", "give 1 or more samples per GPU.")
    grow = at / profile.batch
    layouts = sorted(c if isinstance(c, tuple) else (1, c) for c in counts)
    if any(min(c) < 1 for c in layouts):
        raise UserError(f"GPU counts must be >= 1, got {list(counts)}.", "use e.g. --count 1,4,8.")
    eff = calibration.efficiency_for(level, profile.precision)
    anchored = anchors is not None and anchors.anchored
    ranged = band(profile.workload, profile.kind, anchored=anchored)
    low_factor, high_factor = ranged.low, ranged.high
    relative = relative_error()
    method = "per-kernel model on the HLO profile, calibrated on published data"
    if anchored:
        method = "your measured run x the model's ratio between GPUs (anchored)"
    stack = (
        f"{anchors.describe(at)}; the model's ratios are the {level.name} stack's (--stack)"
        if anchors is not None and anchored
        else f"software stack: {level.name} ({level.description}; --stack picks another)"
    )
    notes = [
        calibration.describe(level),
        stack,
        f"range x{low_factor:.2f} to x{high_factor:.2f}: {ranged.label}; relative speeds off by "
        f"up to {relative:.0%} on a source left out",
        f"profile: {profile.method}, batch {profile.batch} per GPU, {profile.precision}"
        + (f"; predicted at batch {at} per GPU, {ESTIMATED}" if grow != 1 else ""),
        "memory: weights + gradients + optimizer state + activations kept for the backward pass "
        f"(from the HLO), against {MEMORY_HEADROOM:.0%} of the GPU's memory",
        (
            "several GPUs: weights sharded (FSDP / ZeRO-3), the same batch per GPU, each "
            f"weight all-gathered twice a step "
            f"({sharded_weight_bytes(profile, four_bit_base) / 1e9:.3g} GB"
            f"{', the base in 4 bits' if four_bit_base else ''}) and the gradients "
            "reduce-scattered, over the link the all-reduce uses and hidden as it is"
            if sharded
            else "several GPUs: data parallel, the same batch per GPU, ring all-reduce of the "
            "gradients overlapping the backward pass"
        ),
        *(anchors.notes if anchors is not None else ()),
    ]
    if any(nodes * per_node > 1 for nodes, per_node in layouts):
        notes += scaling.describe_layouts(layouts, reference.id)

    def scale(gpu: Gpu) -> float:
        return 1.0 if anchors is None else anchors.scale_for(gpu.id)

    def timed(gpu: Gpu) -> StepEstimate:
        return grown_step(step_time(profile, gpu, eff, tf32), grow)

    ref_sps = scale(reference) * at / timed(reference).seconds
    need = memory_needed(memory_profile(profile, at))
    rows = []
    for gpu in gpus:
        est = timed(gpu)
        rate_note = (
            []
            if "no " not in peak_tflops(gpu, profile.precision, tf32)[1]
            else [f"{gpu.id}: matmuls at {est.matmul_rate}"]
        )
        mine = anchors.on.get(gpu.id) if anchors is not None else None
        best: tuple[float, int] = (0.0, 0)
        for nodes, per_node in layouts:
            n = nodes * per_node
            link = scaling.link(gpu, per_node, nodes, network_gbit, catalog=catalog)
            stepn = scaling.step_seconds(
                est.seconds,
                profile.gradient_bytes(),
                n,
                link.busbw_gb_per_s,
                sharded_bytes=sharded_weight_bytes(profile, four_bit_base) if sharded else 0.0,
            )
            sps = scale(gpu) * n * at / stepn
            low, high, how = sps * low_factor, sps * high_factor, method
            if mine is not None and n == 1 and mine.batch == at:
                sps, low, high = mine.median, mine.low, mine.high  # what was measured
                how = "measured by " + (
                    f"your {runs_said(mine.run_ids)}" if mine.run_ids else "this run"
                )
            rows.append(
                Prediction(
                    gpu=gpu.id,
                    gpu_name=gpu.name,
                    count=n,
                    nodes=nodes,
                    samples_per_second=sps,
                    low=low,
                    high=high,
                    epoch_seconds=epoch_samples / sps,
                    relative_speed=sps / ref_sps,
                    scaling_efficiency=scaling.efficiency(est.seconds, stepn),
                    fits_memory=need <= gpu.memory_gb * 1e9 * MEMORY_HEADROOM,
                    memory_needed_gb=need / 1e9,
                    link=None if n == 1 else f"{link.name}, {link.busbw_gb_per_s:.3g} GB/s bus",
                    method=how,
                    measured=(measured or {}).get((gpu.id, n)) if nodes == 1 else None,
                    measured_scaling=(
                        (measured_scaling or {}).get((gpu.id, n)) if nodes == 1 else None
                    ),
                    assumptions=rate_note + scaling.layout_assumptions(gpu, n, per_node, link),
                    tf32=tf32,
                    split=est.split if n == 1 else {},
                    launches=est.launches,
                    classes=est.classes if n == 1 else {},
                )
            )
            if sps < best[0]:
                rows[-1].assumptions.append(
                    f"communication-bound: {best[1]} x {gpu.id} would be faster than {n}"
                )
            best = max(best, (sps, n))
    notes += _ties(rows, relative)
    notes += sorted({a for gpu in gpus for a in GpuFeatures.from_gpu(gpu).assumptions})
    return rows, notes


def _ties(rows: list[Prediction], relative: float) -> list[str]:
    """Mark each option the model cannot tell from the next slower one with the same GPU
    count, and say so once per pair: a ranking inside the model's error is no ranking."""
    notes = []
    for layout in sorted({(r.nodes, r.count) for r in rows}):
        same = [r for r in rows if (r.nodes, r.count) == layout]
        options = [(r.gpu if r.count == 1 else f"{r.count} x {r.gpu}", r.samples_per_second)
                   for r in same]  # fmt: skip
        by_name = dict(zip((o[0] for o in options), same, strict=True))
        for tie in ranking.ties(options, relative):
            by_name[tie.faster].not_distinguishable_from = by_name[tie.slower].gpu
        notes += ranking.tie_notes(options, relative)
    return notes


__all__ = [
    "Efficiency",
    "Prediction",
    "memory_needed",
    "memory_parts",
    "predict",
    "sharded_weight_bytes",
]
