"""``predict``: training speed of a workload on catalog GPUs, 1..N of them, with a range.

Pipeline: the step's cost profile (``profile.py``) -> single-GPU time from the roofline with
efficiencies fitted to published measurements (``roofline.py``, ``calibrate.py``) -> optionally
scaled by a measured run on one of the GPUs (anchoring) -> data-parallel scaling
(``scaling.py``) -> memory fit. Every assumption behind a number is returned with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuscout.catalog import Catalog, Gpu, peak_tflops
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.errors import UserError
from gpuscout.predict import scaling
from gpuscout.predict.calibrate import Calibration, fit_calibration, published_points
from gpuscout.predict.profile import Profile
from gpuscout.predict.roofline import Efficiency, step_time
from gpuscout.records import RunResult


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

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Anchor:
    """A measured run on a catalog GPU: predictions are scaled so it is reproduced exactly."""

    gpu: Gpu
    samples_per_second: float
    run_id: int | None


def anchor_from_run(run: RunResult, profile: Profile, catalog: Catalog) -> Anchor:
    """The anchor a stored run gives, or a user error saying why it cannot be one."""
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


def memory_needed(profile: Profile) -> float:
    """Bytes: weights, gradients, optimizer state and the activations kept for backward; for a
    forward pass, the weights (it keeps nothing for a backward pass; its transient buffers are
    not counted)."""
    if profile.kind == "forward":
        return profile.param_bytes + profile.saved_activation_bytes
    return 2 * profile.param_bytes + profile.optimizer_state_bytes + profile.saved_activation_bytes


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
    network_gbit: float = 100.0,
) -> tuple[list[Prediction], list[str]]:
    """One prediction per GPU and count, and the assumptions common to all of them.

    A count is a number of GPUs in one machine, or (nodes, GPUs per node). ``measured`` and
    ``measured_scaling`` are keyed by (GPU id, GPU count in one machine).
    """
    layouts = sorted(c if isinstance(c, tuple) else (1, c) for c in counts)
    if any(min(c) < 1 for c in layouts):
        raise UserError(f"GPU counts must be >= 1, got {list(counts)}.", "use e.g. --count 1,4,8.")
    calibration = calibration or fit_calibration(published_points(catalog))
    eff = calibration.efficiency
    low_factor, high_factor = calibration.spread()
    scale, method = 1.0, "roofline on the HLO profile, efficiencies fitted to published data"
    if anchor is not None:
        modelled = profile.batch / step_time(profile, anchor.gpu, eff).seconds
        scale = anchor.samples_per_second / modelled
        method = (
            f"anchored on run {anchor.run_id} ({anchor.gpu.id}, measured "
            f"{anchor.samples_per_second:,.0f}/s): modelled ratios x the measurement"
        )
    notes = [
        calibration.describe(),
        f"range: the middle 80 % of the fit's errors (x{low_factor:.2f} to x{high_factor:.2f})",
        f"profile: {profile.method}, batch {profile.batch} per GPU, {profile.precision}",
        "memory: weights + gradients + optimizer state + activations kept for the backward pass "
        f"(from the HLO), against {MEMORY_HEADROOM:.0%} of the GPU's memory",
        "several GPUs: data parallel, the same batch per GPU, ring all-reduce of the gradients "
        "overlapping the backward pass",
    ]
    ref_sps = scale * profile.batch / step_time(profile, reference, eff).seconds
    need = memory_needed(profile)
    rows = []
    for gpu in gpus:
        est = step_time(profile, gpu, eff)
        rate_note = (
            []
            if "no " not in peak_tflops(gpu, profile.precision)[1]
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
                    link=None if n == 1 else f"{link.name}, {link.busbw_gb_per_s:g} GB/s bus",
                    method="measured anchor" if exact else method,
                    measured=(measured or {}).get((gpu.id, n)) if nodes == 1 else None,
                    measured_scaling=(
                        (measured_scaling or {}).get((gpu.id, n)) if nodes == 1 else None
                    ),
                    assumptions=rate_note + ([] if n == 1 else [link.assumption]),
                )
            )
            if sps < best[0]:
                rows[-1].assumptions.append(
                    f"communication-bound: {best[1]} x {gpu.id} would be faster than {n}"
                )
            best = max(best, (sps, n))
    return rows, notes


__all__ = ["Anchor", "Efficiency", "Prediction", "anchor_from_run", "memory_needed", "predict"]
