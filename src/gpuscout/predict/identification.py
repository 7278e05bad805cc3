"""Which published rows determine each fitted parameter, and which parameters sit on a bound.

A parameter no row can move is not a finding but an assumption, and a parameter on its bound
says the model lacks something: both are printed by ``gpuscout calibrate`` (issue 29), so a
reader never takes a default for a measurement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gpuscout.predict.calibrate import _LOG_TRAFFIC, _POWER_W, _SCALING, _TENSOR, Calibration
from gpuscout.predict.calibration_points import Point, point_terms
from gpuscout.predict.efficiency import RHO_REF, TENSOR_KINDS

# A row determines a kernel kind's share when that kind takes at least this share of its step.
_MATTERS = 0.1


def _gpus(points: Sequence[Point]) -> str:
    names = sorted({p.gpu.id for p in points})
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def identification(cal: Calibration) -> list[dict[str, object]]:
    """One entry per fitted parameter: its value, the rows that determine it (how many, on
    which GPUs), and whether it sits on a bound of the fit."""
    points = cal.points
    shares: dict[int, list[Point]] = {k: [] for k in range(1, len(TENSOR_KINDS) + 1)}
    scaled: dict[int, list[Point]] = {0: [], 1: []}
    powered: list[Point] = []
    for p in points:
        t = point_terms(p)
        eff = cal.for_point(p)
        body, _, _ = t.bodies(eff)
        total = float((t.count * body).sum()) or 1.0
        for kind in shares:
            at = t.tensor == kind
            if float((t.count * body)[at].sum()) / total >= _MATTERS:
                shares[kind].append(p)
                if bool((np.abs(t.rho[at] / RHO_REF - 1) > 0.25).any()):
                    scaled[0 if kind <= 2 else 1].append(p)
        if eff.power_slowdown(t.sm_ghz_per_w) > 1.0:
            powered.append(p)
    out: list[dict[str, object]] = []

    def add(name: str, value: float, rows: Sequence[Point], bounds: tuple[float, float]) -> None:
        on = [b for b in bounds if math.isclose(value, b, rel_tol=1e-3, abs_tol=1e-4)]
        out.append({"parameter": name, "value": round(value, 4), "rows": len(rows),
                    "gpus": _gpus(rows), "on_bound": on[0] if on else None})  # fmt: skip

    for i, name in enumerate(TENSOR_KINDS):
        add(f"tensor share, {name}", cal.tensor[i], shares[i + 1], _TENSOR)
    add("tensor scaling exponent, matmuls", cal.scaling[0], scaled[0], _SCALING)
    add("tensor scaling exponent, convolutions", cal.scaling[1], scaled[1], _SCALING)
    add("board power for full clocks, W per SM-GHz", cal.power_w, powered, _POWER_W)
    bound = (round(math.exp(-_LOG_TRAFFIC), 4), round(math.exp(_LOG_TRAFFIC), 4))
    for stack, value in sorted(cal.stacks.items()):
        mine = [p for p in points if p.stack == stack]
        add(f"DRAM traffic factor, {stack}", value, mine, bound)
    return out


def lines(cal: Calibration) -> list[str]:
    """The identification as sentences for the terminal."""
    text = []
    for entry in identification(cal):
        where = f"{entry['rows']} rows ({entry['gpus']})" if entry["rows"] else "no row"
        bound = (f"; ON ITS BOUND {entry['on_bound']:g}: the model lacks what would move it"
                 if entry["on_bound"] is not None else "")  # fmt: skip
        text.append(f"{entry['parameter']} = {entry['value']:g}: determined by {where}{bound}")
    return text
