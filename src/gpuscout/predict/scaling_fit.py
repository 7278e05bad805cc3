"""Fitting the data-parallel scaling model (``scaling.py``) to published multi-GPU rows.

Each published multi-GPU row gives one efficiency point: its throughput over n x the throughput
of the same source's 1-GPU row (same GPU, precision, software, framework, workload and batch per
GPU). The single-GPU step time is that row's batch / throughput, so no kernel model is needed;
the gradient bytes come from the workload's shipped profile. Super-linear rows (efficiency
above 1) say more about the two rows being unlike than about scaling: they are left out, and
named. With a dozen points the fit keeps to two or three bounded parameters; the rest stay
stated constants, and the fit says how much each could move a point (most cannot: no
published row is bandwidth-bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuscout.catalog import Catalog, Published
from gpuscout.core.errors import UserError
from gpuscout.predict import scaling
from gpuscout.predict.scaling import Constants, LinkKind
from gpuscout.workloads import BERT_LARGE

# Bounds of every constant the fit may free: physical ranges, so a few points cannot drive a
# parameter anywhere absurd.
BOUNDS: dict[str, tuple[float, float]] = {
    "straggler": (0.0, 0.3),
    "sync_s": (0.0, 0.1),
    "overlap": (0.0, 1.0),
    "achieved": (0.02, 1.0),
    "latency_s": (0.0, 1e-3),
    "nvlink_share": (0.05, 1.0),
    "pcie_p2p_share": (0.05, 1.0),
    "pcie_no_p2p_share": (0.02, 1.0),
}
# Published workload names that are a built-in workload at other sizes.
_PROFILE_OF: dict[str, tuple[str, dict[str, int]]] = {"bert-large": ("bert-base", dict(BERT_LARGE))}
F_SCALE = 0.03  # efficiency residuals beyond 3 points count linearly (robust loss)
DEFAULT_FREE = ("straggler", "overlap", "pcie_no_p2p_share")


@dataclass(frozen=True)
class Point:
    """One published multi-GPU row as an efficiency to fit."""

    label: str
    gpu_id: str
    n: int
    step1_s: float
    gradient_bytes: float
    kind: LinkKind
    efficiency: float  # published: throughput(n) / (n x throughput(1))
    busbw_measured: float | None = None  # NCCL busbw of the catalog, where it has one
    line_gb_per_s: float = 0.0  # the link's per-direction line rate, where it has none


def predicted(point: Point, c: Constants) -> float:
    """The model's efficiency for this point under constants ``c``."""
    busbw = point.busbw_measured or point.line_gb_per_s * c.share(point.kind)
    stepn = scaling.step_seconds(point.step1_s, point.gradient_bytes, point.n, busbw, c)
    return scaling.efficiency(point.step1_s, stepn)


def _key(r: Published) -> tuple[object, ...]:
    return (
        r.source_id,
        r.framework,
        r.software,
        r.workload,
        r.seq_len,
        r.precision,
        r.gpu_id,
        r.batch_size_per_gpu,
    )


def _gradient_bytes(workload: str, seq_len: int | None) -> float | None:
    """Bytes all-reduced per step, from the workload's shipped profile (fp32 variables, so
    the same in mixed precision; the batch does not change the parameter count)."""
    from gpuscout.predict.profile import cached
    from gpuscout.workloads import get_workload

    name, extra = _PROFILE_OF.get(workload, (workload, {}))
    for given in ({**extra, "seq_len": seq_len} if seq_len else None, extra):
        if given is None:
            continue
        try:
            wl = get_workload(name)
            dims = wl.resolve(given)
        except UserError:  # a row's workload we have no model of: left out, saying so
            return None
        for precision in ("fp32", "mixed_float16", "mixed_bfloat16"):
            profile = cached(name, dims, wl.default_batch_gpu, precision)
            if profile is not None:
                return float(profile.gradient_bytes())
    return None


def _kind(r: Published, catalog: Catalog) -> LinkKind:
    """The link the row says it ran over; else the one the model assumes for that count."""
    gpu = catalog.gpus[r.gpu_id]
    note = (r.note or "").lower()
    pcie = "link: pcie" in note or ("pcie" in note and "nvlink" not in note)
    if pcie and "link: nvlink" not in note:
        return "pcie_no_p2p" if gpu.market == "consumer" else "pcie_p2p"
    return scaling.link_kind(gpu, r.gpu_count)


def published_points(catalog: Catalog) -> tuple[list[Point], list[str]]:
    """Efficiency points of the catalog's multi-GPU rows, and a line per row left out."""
    singles = {_key(r): r for r in catalog.published if r.gpu_count == 1}
    points: list[Point] = []
    left_out: list[str] = []
    for r in catalog.published:
        if r.gpu_count == 1:
            continue
        label = f"{r.source_id} {r.gpu_id} {r.precision} {r.workload} x{r.gpu_count}"
        one = singles.get(_key(r))
        if not r.batch_size_per_gpu or r.gpu_id not in catalog.gpus:
            left_out.append(f"{label}: no batch size per GPU, or a GPU the catalog lacks")
            continue
        if one is None:
            left_out.append(f"{label}: no 1-GPU row of the same source, software and batch")
            continue
        eff = r.throughput / (r.gpu_count * one.throughput)
        if eff > 1.0:
            left_out.append(
                f"{label}: super-linear, {r.throughput:,.0f}/s is {eff:.1%} of "
                f"{r.gpu_count} x {one.throughput:,.0f}/s (the two rows are not comparable)"
            )
            continue
        gpu = catalog.gpus[r.gpu_id]
        most, why = scaling.max_per_machine(gpu)
        if r.gpu_count > most:
            left_out.append(f"{label}: more GPUs than one machine holds ({why})")
            continue
        grad = _gradient_bytes(r.workload, r.seq_len)
        if grad is None:
            left_out.append(f"{label}: no shipped profile of {r.workload}")
            continue
        kind = _kind(r, catalog)
        link = scaling.link(gpu, r.gpu_count, catalog=catalog, kind=kind)
        measured = link.busbw_gb_per_s if "measured" in link.assumption else None
        line = (
            gpu.nvlink_gb_per_s_per_direction or 0.0
            if kind == "nvlink"
            else scaling.PCIE_GB_PER_S_PER_DIRECTION.get(gpu.pcie_gen or 4, 32.0)
        )
        points.append(
            Point(
                label=label,
                gpu_id=r.gpu_id,
                n=r.gpu_count,
                step1_s=r.batch_size_per_gpu / one.throughput,
                gradient_bytes=grad,
                kind=kind,
                efficiency=eff,
                busbw_measured=measured,
                line_gb_per_s=line,
            )
        )
    return points, left_out


def fit(
    points: Sequence[Point],
    free: Sequence[str] = DEFAULT_FREE,
    base: Constants | None = None,
    loss: str = "soft_l1",
) -> Constants:
    """Least squares on the efficiency points over the ``free`` constants (within
    ``BOUNDS``); the others keep ``base``'s values. The loss is robust (``soft_l1``: residuals
    beyond ``F_SCALE`` count linearly): a few published rows lose half their throughput to
    something no all-reduce model explains (a 1-GPU row run differently), and squared
    residuals would let them set every constant."""
    import numpy as np
    from scipy.optimize import least_squares

    base = base or Constants()
    if not points:
        return base
    lo = np.array([BOUNDS[k][0] for k in free])
    hi = np.array([BOUNDS[k][1] for k in free])

    def consts(x: np.ndarray) -> Constants:
        return replace(base, **{k: float(v) for k, v in zip(free, x, strict=True)})  # type: ignore[arg-type]

    def residuals(x: np.ndarray) -> np.ndarray:
        c = consts(x)
        return np.array([predicted(p, c) - p.efficiency for p in points])

    best = None
    # a few starts: with max() in the model the surface has kinks
    for start in (0.1, 0.5, 0.9):
        x0 = lo + start * (hi - lo)
        res = least_squares(
            residuals,
            x0,
            bounds=(lo, hi),
            x_scale=hi - lo,
            method="trf",
            loss=loss,
            f_scale=F_SCALE,
        )
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    # a value at its bound to within the solver's tolerance is the bound (0 stays 0)
    width = hi - lo
    x = np.where(best.x - lo < 1e-6 * width, lo, np.where(hi - best.x < 1e-6 * width, hi, best.x))
    return replace(consts(x), fitted=tuple(free), rows=len(points))


def leave_one_out(
    points: Sequence[Point], free: Sequence[str] = DEFAULT_FREE, base: Constants | None = None
) -> list[float]:
    """Each point's error in points of efficiency (x100) when fitted without it."""
    errors = []
    for i, p in enumerate(points):
        rest = [q for j, q in enumerate(points) if j != i]
        c = fit(rest, free, base)
        errors.append(100 * (predicted(p, c) - p.efficiency))
    return errors


def sensitivity(points: Sequence[Point], c: Constants, name: str) -> float:
    """The most any point's efficiency moves (points) as ``name`` spans its bounds: about 0
    for a constant the published rows cannot pin down."""
    lo, hi = BOUNDS[name]
    values = [lo + (hi - lo) * i / 8 for i in range(9)]
    most = 0.0
    for p in points:
        effs = [predicted(p, replace(c, **{name: v})) for v in values]  # type: ignore[arg-type]
        most = max(most, 100 * (max(effs) - min(effs)))
    return most


def mean_abs(errors: Sequence[float]) -> float:
    return sum(abs(e) for e in errors) / len(errors) if errors else math.nan


__all__ = [
    "BOUNDS",
    "DEFAULT_FREE",
    "Point",
    "fit",
    "leave_one_out",
    "mean_abs",
    "predicted",
    "published_points",
    "sensitivity",
]
