"""In sample, per software stack: MAPE of the fitted rows and the fitted parameters, with the
ones on a bound marked (issue 41). Fit on every published row (as shipped) unless --dev.

    python benchmarks/stack_fit.py           # all 142 rows, as the shipped fit
    python benchmarks/stack_fit.py --dev     # development rows only (the frozen split out)
    python benchmarks/stack_fit.py --rows    # and every row's predicted / published
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

from gpuscout.catalog import load_catalog
from gpuscout.predict import calibrate as c
from gpuscout.predict.calibrate import fit_calibration, modelled
from gpuscout.predict.calibration_points import published_points
from gpuscout.predict.efficiency import TENSOR_KINDS
from gpuscout.predict.out_of_sample import development, mape


def _on(value: float, lo: float, hi: float) -> str:
    tol = 1e-3 * max(1.0, abs(hi - lo))
    return " ON BOUND" if abs(value - lo) < tol or abs(value - hi) < tol else ""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", action="store_true")
    ap.add_argument("--rows", action="store_true")
    args = ap.parse_args(argv)
    points = published_points(load_catalog())
    if args.dev:
        points = development(points)
    cal = fit_calibration(points)
    print(f"fit on {len(points)} rows: {cal.describe()}")
    print("parameters (bounds):")
    for kind, v in zip(TENSOR_KINDS, cal.tensor, strict=True):
        print(f"  tensor {kind:18s} {v:7.3f}  {c._TENSOR}{_on(v, *c._TENSOR)}")
    for name, v in zip(("scaling matmul", "scaling conv"), cal.scaling, strict=True):
        print(f"  {name:25s} {v:7.3f}  {c._SCALING}{_on(v, *c._SCALING)}")
    print(f"  {'power_w':25s} {cal.power_w:7.3f}  {c._POWER_W}{_on(cal.power_w, *c._POWER_W)}")
    for name, v in sorted(getattr(cal, "extra", {}).items()):
        lo, hi = getattr(c, "EXTRA_BOUNDS", {}).get(name, (-math.inf, math.inf))
        print(f"  {name:25s} {v:7.3f}  ({lo:g}, {hi:g}){_on(v, lo, hi)}")
    lt = c._LOG_TRAFFIC
    by: dict[str, list[float]] = defaultdict(list)
    rows: dict[str, list[str]] = defaultdict(list)
    for p, e in zip(cal.points, cal.log_errors, strict=True):
        by[p.stack].append(e)
        rows[p.stack].append(
            f"      {p.label:70s} {p.measured:8.1f} -> "
            f"{modelled(cal, p):8.1f} ({math.exp(e) - 1:+.0%})"
        )
    print(
        f"per stack: traffic factor (bounds x{math.exp(-lt):.3f}-x{math.exp(lt):.3f}), "
        "in-sample MAPE, rows"
    )
    for s in sorted(by):
        f = cal.stacks[s]
        flag = _on(math.log(f), -lt, lt)
        print(f"  {s:42s} x{f:5.3f}{flag:9s} MAPE {mape(by[s]):5.1%}  n={len(by[s])}")
        if args.rows:
            print("\n".join(rows[s]))
    print(
        f"all rows: MAPE {mape(list(cal.log_errors)):.1%}; stacks above 10 %: "
        f"{sum(mape(v) > 0.10 for v in by.values())} of {len(by)}"
    )


if __name__ == "__main__":
    main()
