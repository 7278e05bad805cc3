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
from gpuscout.records import RunResult
from gpuscout.workloads import BERT_LARGE

# Published workload -> the profile that models it (batch of the shipped profile).
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
    for row in catalog.published:
        point = _point(catalog, row)
        if point is not None:
            points.append(point)
    return points


def run_points(runs: Sequence[RunResult], catalog: Catalog) -> list[Point]:
    """The user's stored GPU runs of built-in workloads whose step profile is at hand."""
    points = []
    for run in runs:
        gpu = catalog.find_device(str(run.env.get("device_name") or ""))
        if gpu is None or run.status != "ok" or run.samples_per_second is None:
            continue
        if run.config.model or run.replicas > 1 or run.mode != "train":  # one GPU's training
            continue
        profile = cached(run.workload, run.config.dims, run.batch_size, run.precision)
        if profile is not None:
            label = f"{gpu.id} {run.workload} {run.precision} (your run {run.id})"
            points.append(
                Point(gpu, profile, run.samples_per_second.median, "stored", label, run.workload)
            )
    return points


def _point(catalog: Catalog, row: Published) -> Point | None:
    if row.gpu_count != 1 or row.workload not in _SHAPES:
        return None
    workload, dims, batch = _SHAPES[row.workload]
    if row.seq_len:
        dims = {**dims, "seq_len": row.seq_len}
    profile = cached(workload, dims, batch, row.precision)
    if profile is None:
        return None
    label = f"{row.gpu} {row.workload} {row.precision} ({row.source_id})"
    return Point(
        catalog.gpus[row.gpu_id], profile, row.throughput, row.source_id, label, row.workload
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
