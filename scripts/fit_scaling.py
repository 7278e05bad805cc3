"""Regenerate ``src/gpuscout/predict/data/scaling_fit.json``: the data-parallel scaling
model's constants, fitted to the catalog's published multi-GPU rows.

Fast (seconds, no TensorFlow). Run after adding or changing multi-GPU rows in
``published_training.csv`` or bus bandwidths in ``nccl_busbw.csv``. Prints the fitted
constants, each stated constant's reach (how far it could move any point: about 0 means the
published rows cannot pin it down), the leave-one-row-out error in points of efficiency, the
predicted against the published efficiency of every row, and the rows left out with why.

    python scripts/fit_scaling.py
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict import scaling_fit
from gpuscout.predict.scaling import Constants

OUT = (
    Path(__file__).resolve().parents[1]
    / "src"
    / "gpuscout"
    / "predict"
    / "data"
    / "scaling_fit.json"
)


def main() -> None:
    catalog = load_catalog()
    points, left_out = scaling_fit.published_points(catalog)
    free = scaling_fit.DEFAULT_FREE
    base = Constants()  # the stated values of everything not fitted
    fitted = scaling_fit.fit(points, free, base)
    loo = scaling_fit.leave_one_out(points, free, base)
    mae = scaling_fit.mean_abs(loo)
    fitted = replace(fitted, loo_mae_points=round(mae, 2), left_out=tuple(left_out))
    reach = {
        k: round(scaling_fit.sensitivity(points, fitted, k), 2)
        for k in scaling_fit.BOUNDS
        if k not in free
    }
    rows = [
        {
            "row": p.label,
            "link": p.kind,
            "published": round(p.efficiency, 4),
            "predicted": round(scaling_fit.predicted(p, fitted), 4),
            "leave_one_out_error_points": round(e, 2),
        }
        for p, e in zip(points, loo, strict=True)
    ]
    by_workload: dict[str, list[float]] = {}
    for p, e in zip(points, loo, strict=True):
        by_workload.setdefault(p.label.split()[3], []).append(e)
    mae_by = {k: round(scaling_fit.mean_abs(v), 2) for k, v in sorted(by_workload.items())}
    out = {
        "about": (
            "data-parallel scaling constants (gpuscout.predict.scaling), fitted by "
            "scripts/fit_scaling.py to the published multi-GPU rows of published_training.csv; "
            "efficiency = throughput(n) / (n x throughput(1)) of the same source, GPU, "
            "precision, software and batch"
        ),
        "constants": fitted.to_json(),
        "bounds": {k: list(scaling_fit.BOUNDS[k]) for k in free},
        "stated_reach_points": reach,
        "leave_one_row_out_mae_points_by_workload": mae_by,
        "rows": rows,
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(
        f"fitted to {len(points)} rows: " + ", ".join(f"{k}={getattr(fitted, k):.4g}" for k in free)
    )
    print(f"leave-one-row-out mean absolute error: {mae:.2f} points of efficiency")
    print("  by workload: " + ", ".join(f"{k} {v:.2f}" for k, v in mae_by.items()))
    print(
        "stated constants, most they move any point (points): "
        + ", ".join(f"{k} {v:g}" for k, v in reach.items())
    )
    for r in rows:
        print(
            f"  {r['row']:58s} {r['link']:12s} published {r['published']:.1%} "
            f"predicted {r['predicted']:.1%} (held out: {r['leave_one_out_error_points']:+.1f})"
        )
    for line in left_out:
        print(f"  left out: {line}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
