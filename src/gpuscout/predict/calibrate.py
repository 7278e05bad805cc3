"""Fitting the roofline's efficiencies to published training measurements (scipy).

Each single-GPU row of the catalog's published throughput becomes a point: the profile of the
same workload and precision, the GPU, and the measured samples/s. The three efficiencies are
the ones that minimise the squared log error of the modelled against the measured speeds.
The spread of the remaining errors sets the low-high range of a prediction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from gpuscout.catalog import Catalog, Gpu, Published
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import Efficiency, samples_per_second
from gpuscout.records import FIT_PREFIX, RunResult
from gpuscout.workloads import BERT_LARGE

# Published workload -> the profile that models it: workload, dims, and the batch per GPU of the
# shipped profile, which is the batch every published row of it is modelled at, whatever batch
# the source ran (``gpuscout calibrate`` prints both, per row).
_SHAPES: dict[str, tuple[str, dict[str, int], int]] = {
    "resnet50": ("resnet50", {}, 256),
    "bert-base": ("bert-base", {}, 32),
    "bert-large": ("bert-base", dict(BERT_LARGE), 32),
}


@dataclass(frozen=True)
class Point:
    """One measurement to fit: a profile on a GPU at a measured speed (samples/s per GPU)."""

    gpu: Gpu
    profile: Profile
    measured: float
    source_id: str
    label: str
    workload: str = ""  # as the source names it (resnet50, bert-base, bert-large)
    measured_batch: int | None = None  # per GPU, as measured (None: the source does not say)
    origin: str = "built-in"  # the catalog file of the published row ("built-in": shipped)

    @property
    def modelled_batch(self) -> int:
        """Per GPU, as modelled: the profile's batch."""
        return self.profile.batch


@dataclass(frozen=True)
class Calibration:
    efficiency: Efficiency
    points: tuple[Point, ...]
    log_errors: tuple[float, ...]  # log(modelled / measured) per point

    def spread(self) -> tuple[float, float]:
        """Factors (low, high) that cover the middle 80 % of the fit's errors."""
        if len(self.log_errors) < 3:
            return (0.7, 1.3)
        lo, hi = np.percentile(self.log_errors, [10, 90])
        return (math.exp(-float(hi)), math.exp(-float(lo)))

    def describe(self) -> str:
        e = self.efficiency
        return (
            f"fitted to {len(self.points)} published measurements: tensor cores at {e.tensor:.0%} "
            f"of peak, CUDA cores at {e.cuda:.0%}, memory at {e.memory:.0%} of bandwidth"
        )


def published_points(catalog: Catalog) -> list[Point]:
    """The catalog's single-GPU published measurements that have a shipped profile."""
    points = []
    for index, row in enumerate(catalog.published):
        point = _point(catalog, row, catalog.published_origin(index))
        if point is not None:
            points.append(point)
    return points


def user_rows_used(catalog: Catalog, points: Sequence[Point]) -> list[str]:
    """One line per user catalog file whose rows this fit or its predictions use: the GPUs
    whose shipped rows it replaces or that it adds, and the published measurements it brings.

    A user's row moves every fitted efficiency (a TB/s-for-GB/s typo in one GPU row once moved
    them from 95/80/49 % to 35/67/100 %), so it never enters a calibration silently.
    """
    on_gpu: dict[str, int] = {}
    brought: dict[str, list[str]] = {}
    for p in points:
        on_gpu[p.gpu.id] = on_gpu.get(p.gpu.id, 0) + 1
        if p.origin != "built-in":
            brought.setdefault(p.origin, []).append(p.gpu.id)
    lines = []
    for path, ids in catalog.user_gpus().items():
        parts = []
        for gpu_id in sorted(ids):
            verb = "replaces the shipped row of" if gpu_id in catalog.overrides else "adds"
            used = on_gpu.get(gpu_id, 0)
            fit = f", under {used} measurement{'s' * (used != 1)} in the fit" if used else ""
            parts.append(f"{verb} {gpu_id}{fit}")
        lines.append(f"your catalog {path} {'; '.join(parts)}")
    for path, ids in brought.items():
        lines.append(
            f"your catalog {path} brings {len(ids)} published measurement"
            f"{'s' * (len(ids) != 1)} into the fit ({', '.join(sorted(set(ids)))})"
        )
    return lines


def run_points(runs: Sequence[RunResult], catalog: Catalog) -> tuple[list[Point], list[str]]:
    """The user's stored GPU runs that can be calibration points, and a note for each GPU run
    that cannot (grouped by reason), so a run left out is never left out silently.

    A point needs a catalog GPU, samples/s, one device, training, and the step profile of a
    built-in workload at that batch and precision, shipped or cached: never traced here, as
    computing one needs TensorFlow. CPU runs and inference runs are no points, and no news.
    """
    from gpuscout.workloads import WORKLOADS

    points: list[Point] = []
    left_out: dict[str, list[str]] = {}
    for run in runs:
        if run.status != "ok" or run.mode != "train" or not run.device.startswith("GPU"):
            continue
        device = str(run.env.get("device_name") or run.device)
        gpu = catalog.find_device(device)
        reason = None
        profile = None
        if gpu is None:
            reason = f"its GPU '{device}' is not in the catalog"
        elif run.samples_per_second is None:
            reason = "it measured steps/s only (ScoutCallback without batch_size), not samples/s"
        elif run.workload.startswith(FIT_PREFIX) or run.config.model:
            reason = "your own model: gpuscout keeps no step profile of it to model it with"
        elif run.workload not in WORKLOADS:
            reason = f"'{run.workload}' is not a built-in workload"
        elif run.replicas > 1:
            reason = f"it ran on {run.replicas} devices; calibration models one GPU"
        else:
            profile = cached(run.workload, run.config.dims, run.batch_size, run.precision)
            if profile is None:
                reason = (
                    f"no step profile of {run.workload} at batch {run.batch_size}, "
                    f"{run.precision} is at hand (gpuscout predict --workload {run.workload} "
                    f"--batch-size {run.batch_size} --precision {run.precision} traces one, "
                    "with TensorFlow, and keeps it)"
                )
        if reason is not None or gpu is None or profile is None or run.samples_per_second is None:
            left_out.setdefault(f"{run.workload}: {reason}", []).append(str(run.id))
            continue
        label = f"{gpu.id} {run.workload} {run.precision} (your run {run.id})"
        measured = run.samples_per_second.median
        point = Point(gpu, profile, measured, "stored", label, run.workload, run.batch_size)
        points.append(point)
    notes = [
        f"not in the calibration: your run{'s' if len(ids) > 1 else ''} {', '.join(ids)} ({why})"
        for why, ids in left_out.items()
    ]
    return points, notes


def _point(catalog: Catalog, row: Published, origin: str = "built-in") -> Point | None:
    if row.gpu_count != 1 or row.workload not in _SHAPES:
        return None
    workload, dims, batch = _SHAPES[row.workload]
    if row.seq_len:
        dims = {**dims, "seq_len": row.seq_len}
    profile = cached(workload, dims, batch, row.precision)
    if profile is None:
        return None
    label = f"{row.gpu} {row.workload} {row.precision} ({row.source_id})"
    gpu = catalog.gpus[row.gpu_id]
    return Point(
        gpu,
        profile,
        row.throughput,
        row.source_id,
        label,
        row.workload,
        row.batch_size_per_gpu,
        origin,
    )


def _errors(theta: Sequence[float], points: Sequence[Point]) -> np.ndarray:
    eff = Efficiency(*theta)
    return np.array(
        [math.log(samples_per_second(p.profile, p.gpu, eff) / p.measured) for p in points]
    )


def fit_calibration(points: Sequence[Point]) -> Calibration:
    """Least-squares efficiencies (each between 1 % and 100 %) for these points."""
    if len(points) < 3:
        raise ValueError("at least 3 measurements are needed to fit 3 efficiencies")
    result = least_squares(
        _errors, x0=[0.5, 0.5, 0.5], bounds=([0.01] * 3, [1.0] * 3), args=(points,)
    )
    eff = Efficiency(*(float(x) for x in result.x))
    return Calibration(eff, tuple(points), tuple(float(e) for e in _errors(result.x, points)))
