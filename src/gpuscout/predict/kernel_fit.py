"""Fitting the kernel model's per-op parameters to measured kernels (SciPy, only here).

The model itself, and why it has these parameters, is :mod:`gpuscout.predict.kernel_model`;
``scripts/fit_kernel_model.py`` runs this fit on ``data/kernels`` and ships the result.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gpuscout.predict.kernel_model import (
    BYTES_PER_CLOCK_MIN,
    L2_GAIN_MAX,
    Array,
    OpParams,
    combine,
    components_of,
)
from gpuscout.predict.kernels import Op

if TYPE_CHECKING:
    from gpuscout.predict.kernel_data import KernelArrays


# The fit. Continuous parameters: (name, low, high, start, log-scaled).
FREE = (
    ("u_compute", 0.05, 1.0, 0.6, True),
    ("u_mem", 0.05, 1.0, 0.7, True),
    ("l2_gain", 1.0, L2_GAIN_MAX, 1.5, False),
    ("bytes_per_clock", BYTES_PER_CLOCK_MIN, 1024.0, 64.0, True),
    ("launch_s", 1e-6, 3e-4, 3e-5, True),
    ("overlap", 1.0, 16.0, 4.0, False),
)
TILES = ((64, 64, 1), (64, 64, 2), (128, 64, 1), (128, 64, 2), (128, 128, 1))


def fit_op(
    op: Op,
    data: KernelArrays,
    tiles: tuple[tuple[int, int, int], ...] = TILES,
    fixed: dict[str, float] | None = None,
) -> tuple[OpParams, float]:
    """Least squares in log time (robust: soft-L1) of one op's parameters on measured rows; for
    GEMMs each tile shape in ``tiles`` is tried and the best kept. Returns the parameters and
    the final mean squared log error. ``fixed`` pins parameters (by name) to values."""
    from scipy.optimize import least_squares  # only the fit needs SciPy

    fixed = fixed or {}
    rows = data.op == op
    d = data.take(rows)
    if not len(d):
        raise ValueError(f"no rows for op {op!r} to fit")
    # A call's fixed cost cannot exceed the fastest call measured: bound launch_s by it.
    fastest = float(np.min(d.seconds))
    free = [
        (f[0], f[1], min(f[2], fastest), min(f[3], fastest / 2), f[4]) if f[0] == "launch_s" else f
        for f in FREE
        if f[0] not in fixed
    ]
    lo = np.array([math.log(f[1]) if f[4] else f[1] for f in free])
    hi = np.array([math.log(f[2]) if f[4] else f[2] for f in free])
    x0 = np.array([math.log(f[3]) if f[4] else f[3] for f in free])
    target = np.log(d.seconds)
    gemm = op in ("matmul", "conv")

    def params(x: Array, tile: tuple[int, int, int]) -> OpParams:
        # exp(log(1.0)) may round above 1: clip to the bounds.
        values = {
            f[0]: min(max(math.exp(v) if f[4] else float(v), f[1]), f[2])
            for f, v in zip(free, x, strict=True)
        }
        return OpParams(**values, **fixed, tile_m=tile[0], tile_n=tile[1], tiles_per_sm=tile[2])

    best: tuple[OpParams, float] | None = None
    for tile in tiles if gemm else tiles[:1]:

        def residual(x: Array, tile: tuple[int, int, int] = tile) -> Array:
            p = params(x, tile)
            c, m = components_of(p, gemm, d, d.fp32_flops)
            return np.log(combine(p, c, m)) - target

        result = least_squares(
            residual, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.2, diff_step=1e-3, max_nfev=400
        )
        p = params(result.x, tile)
        loss = float(np.mean(residual(result.x) ** 2))
        if best is None or loss < best[1]:
            best = (p, loss)
    assert best is not None
    return best
