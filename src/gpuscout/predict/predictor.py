"""``predict``: training speed of a workload on catalog GPUs, 1..N of them, with a range.

Pipeline: the step's cost profile and its kernels (``profile.py``) -> single-GPU time as the
sum of its kernels, each timed by the kernel model learned from measured kernels
(``kernel_model.py``, ``roofline.py``) with what kernels cannot know fitted to published
end-to-end measurements (``calibrate.py``) -> optionally
scaled by a measured run on one of the GPUs (anchoring) -> data-parallel scaling
(``scaling.py``) -> memory fit -> which options are closer than the model's out-of-sample
error (``ranking.py``). Every assumption behind a number is returned with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuscout.catalog import Catalog, Gpu, peak_tflops
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.errors import UserError
from gpuscout.predict import ranking, scaling
from gpuscout.predict.calibrate import Calibration, calibration_for
from gpuscout.predict.kernel_model import GpuFeatures
from gpuscout.predict.profile import Profile
from gpuscout.predict.roofline import Efficiency, step_time
from gpuscout.records import RunResult
from gpuscout.run_settings import ran_with_tf32


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


@dataclass(frozen=True)
class Anchor:
    """A measured run on a catalog GPU: predictions are scaled so it is reproduced exactly."""

    gpu: Gpu
    samples_per_second: float
    run_id: int | None


def anchor_from_run(
    run: RunResult, profile: Profile, catalog: Catalog, tf32: bool = True
) -> Anchor:
    """The anchor a stored run gives, or a user error saying why it cannot be one.

    ``tf32``: the prediction's TF32 setting; an fp32 run measured with the other one would
    carry TF32's speed-up (or its absence) into every GPU's prediction, so it cannot anchor."""
    device = str(run.env.get("device_name") or run.device)
    gpu = catalog.find_device(device)
    problems = []
    if run.status != "ok":
        problems.append(f"it did not succeed (status {run.status})")
    elif run.samples_per_second is None:
        problems.append("it measured steps/s only (no batch size given), not samples/s")
    if run.mode != "train":
        problems.append("it measured inference, not training")
    if gpu is None:
        problems.append(f"its device '{device}' is not a catalog GPU")
    if run.workload != profile.workload or run.precision != profile.precision:
        problems.append(
            f"it measured {run.workload} {run.precision}, not {profile.workload} "
            f"{profile.precision}"
        )
    ran_tf32 = ran_with_tf32(run.env, run.config.tf32)
    if profile.precision == "fp32" and ran_tf32 != tf32:
        problems.append(
            f"it ran with TF32 {'on' if ran_tf32 else 'off'}, this prediction has it "
            f"{'on' if tf32 else 'off'} ({'add' if tf32 else 'drop'} --no-tf32 to match)"
        )
    if run.replicas > 1:
        problems.append(f"it ran data parallel on {run.replicas} replicas, not one GPU")
    elif run.batch_size != profile.batch:
        problems.append(f"its batch size {run.batch_size} is not {profile.batch}")
    if problems or gpu is None or run.samples_per_second is None:
        raise UserError(
            f"run {run.id} cannot anchor this prediction: {'; '.join(problems)}.",
            "pick a successful GPU run of the same workload, precision and batch size "
            "('gpuscout runs list'), or drop --from-run.",
        )
    return Anchor(gpu, run.samples_per_second.median, run.id)


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
    anchor: Anchor | None = None,
    measured: dict[tuple[str, int], float] | None = None,
    measured_scaling: dict[tuple[str, int], float] | None = None,
    calibration: Calibration | None = None,
    network_gbit: float = scaling.DEFAULT_NETWORK_GBIT,
    tf32: bool = True,
) -> tuple[list[Prediction], list[str]]:
    """One prediction per GPU and count, and the assumptions common to all of them.

    A count is a number of GPUs in one machine, or (nodes, GPUs per node). ``measured`` and
    ``measured_scaling`` are keyed by (GPU id, GPU count in one machine). ``tf32``: float32
    matmuls on TF32 tensor cores (TensorFlow's default) or, False, on CUDA cores (``--no-tf32``,
    PyTorch's default); it changes nothing for mixed precision's FP16/BF16 matmuls.
    """
    layouts = sorted(c if isinstance(c, tuple) else (1, c) for c in counts)
    if any(min(c) < 1 for c in layouts):
        raise UserError(f"GPU counts must be >= 1, got {list(counts)}.", "use e.g. --count 1,4,8.")
    calibration = calibration or calibration_for(catalog)
    eff = calibration.efficiency
    band = calibration.band(profile.workload, profile.kind)
    low_factor, high_factor = band.low, band.high
    relative = calibration.relative_error()
    scale, method = 1.0, "per-kernel model on the HLO profile, calibrated on published data"
    if anchor is not None:
        modelled = profile.batch / step_time(profile, anchor.gpu, eff, tf32).seconds
        scale = anchor.samples_per_second / modelled
        method = (
            f"anchored on run {anchor.run_id} ({anchor.gpu.id}, measured "
            f"{anchor.samples_per_second:,.0f}/s): modelled ratios x the measurement"
        )
    notes = [
        calibration.describe(),
        f"range x{low_factor:.2f} to x{high_factor:.2f}: {band.label}; relative speeds off by "
        f"up to {relative:.0%} on a source left out",
        f"profile: {profile.method}, batch {profile.batch} per GPU, {profile.precision}",
        "memory: weights + gradients + optimizer state + activations kept for the backward pass "
        f"(from the HLO), against {MEMORY_HEADROOM:.0%} of the GPU's memory",
        "several GPUs: data parallel, the same batch per GPU, ring all-reduce of the gradients "
        "overlapping the backward pass",
    ]
    if any(nodes * per_node > 1 for nodes, per_node in layouts):
        notes += scaling.describe_layouts(layouts, reference.id)
    ref_sps = scale * profile.batch / step_time(profile, reference, eff, tf32).seconds
    need = memory_needed(profile)
    rows = []
    for gpu in gpus:
        est = step_time(profile, gpu, eff, tf32)
        rate_note = (
            []
            if "no " not in peak_tflops(gpu, profile.precision, tf32)[1]
            else [f"{gpu.id}: matmuls at {est.matmul_rate}"]
        )
        best: tuple[float, int] = (0.0, 0)
        for nodes, per_node in layouts:
            n = nodes * per_node
            link = scaling.link(gpu, per_node, nodes, network_gbit, catalog=catalog)
            stepn = scaling.step_seconds(
                est.seconds, profile.gradient_bytes(), n, link.busbw_gb_per_s
            )
            sps = scale * n * profile.batch / stepn
            exact = anchor is not None and gpu.id == anchor.gpu.id and n == 1
            rows.append(
                Prediction(
                    gpu=gpu.id,
                    gpu_name=gpu.name,
                    count=n,
                    nodes=nodes,
                    samples_per_second=sps,
                    low=sps if exact else sps * low_factor,
                    high=sps if exact else sps * high_factor,
                    epoch_seconds=epoch_samples / sps,
                    relative_speed=sps / ref_sps,
                    scaling_efficiency=scaling.efficiency(est.seconds, stepn),
                    fits_memory=need <= gpu.memory_gb * 1e9 * MEMORY_HEADROOM,
                    memory_needed_gb=need / 1e9,
                    link=None if n == 1 else f"{link.name}, {link.busbw_gb_per_s:.3g} GB/s bus",
                    method="measured anchor" if exact else method,
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


__all__ = ["Anchor", "Efficiency", "Prediction", "anchor_from_run", "memory_needed", "predict"]
