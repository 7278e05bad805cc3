"""How wrong are predictions on data the model was not fitted to? All of it out of sample.

1. Kernel level: the kernel model (learned from NeuSight's 155,764 measured kernels on five
   GPUs) with each GPU left out in turn, mean absolute percentage error per op type. Read from
   the shipped fit, which ``python scripts/fit_kernel_model.py`` recomputes (about 1.5 min).
2. End to end, on the published single-GPU training rows, each modelled at its own batch:
   - leave one GPU out: absolute speed of a GPU no row of which was fitted;
   - leave one source out: speed relative to the other GPUs of the held-out source (what a
     ranking depends on), per workload family;
   - leave the newest architectures out: fit on Ampere and older, predict Ada, Hopper and
     Blackwell (absolute, and relative to the older GPUs of the same source).
3. Scaling: leave-one-row-out mean absolute error in points of efficiency over the published
   multi-GPU rows, from the shipped fit (``python scripts/fit_scaling.py`` recomputes it).

    python benchmarks/prediction_accuracy.py           # print
    python benchmarks/prediction_accuracy.py --write   # and store the fit and the figures
                                                       # predictions use (predict/data/)
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict.calibrate import fit_calibration, write_shipped
from gpuscout.predict.calibration_points import published_points
from gpuscout.predict.out_of_sample import (
    NEWEST,
    Figures,
    Held,
    family,
    leave_newest_out,
    leave_one_gpu_out,
    leave_one_source_out,
    mape,
    write,
)


def _data(name: str) -> dict:  # type: ignore[type-arg]
    path = Path(str(resources.files("gpuscout.predict") / "data" / name))
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def kernel_level() -> None:
    fit = _data("kernel_model.json")
    print(f"1. kernel level, leave one GPU out ({fit['rows_total']:,} measured kernels, "
          f"{fit['source'].split(':')[0]})")  # fmt: skip
    print(f"   {'op type':22s} {'MAPE':>7s} {'median':>7s} {'rows':>8s}")
    for kind, row in fit["leave_one_gpu_out"].items():
        print(f"   {kind:22s} {row['mape_pct']:6.1f}% {row['median_ape_pct']:6.1f}% "
              f"{row['rows']:8,}")  # fmt: skip


def _table(title: str, held: Sequence[Held]) -> None:
    by: dict[str, list[Held]] = defaultdict(list)
    for h in held:
        by[family(h.point)].append(h)
        by["all"].append(h)
    print(f"   {title}")
    print(f"   {'workload':12s} {'relative speed':>18s} {'absolute':>16s}")
    for name in sorted(by, key=lambda k: (k == "all", k)):
        rel = [h.relative for h in by[name] if h.relative is not None]
        ab = [h.absolute for h in by[name]]
        rel_text = f"{mape(rel):.1%} (n={len(rel)})" if rel else "-"
        print(f"   {name:12s} {rel_text:>18s} {mape(ab):>7.1%} (n={len(ab)})")


def end_to_end(points: Sequence) -> None:  # type: ignore[type-arg]
    full = fit_calibration(points)
    in_sample = mape(full.log_errors)
    gpus, sources = len({p.gpu.id for p in points}), len({p.source_id for p in points})
    print(f"\n2. end to end: {len(points)} published single-GPU rows, {gpus} GPUs, {sources} "
          "sources")  # fmt: skip
    print(f"   fit on all of them: {full.describe()}")
    print(f"   in-sample error {in_sample:.1%} (for reference only: never a measure of accuracy)")
    _table("leave one GPU out:", leave_one_gpu_out(points))
    _table("leave one source out:", leave_one_source_out(points))
    newest = leave_newest_out(points)
    _table(f"fit on Ampere and older, predict {', '.join(NEWEST)}:", newest)


def scaling() -> None:
    fit = _data("scaling_fit.json")
    c = fit["constants"]
    print(f"\n3. scaling, leave one row out: {c['loo_mae_points']:.2f} points mean absolute error "
          f"over {c['rows']} published multi-GPU rows")  # fmt: skip
    for workload, points in fit["leave_one_row_out_mae_points_by_workload"].items():
        print(f"   {workload:12s} {points:5.2f} points")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="store predict's figures")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    points = published_points(load_catalog())
    kernel_level()
    end_to_end(points)
    scaling()
    figures = Figures.of(points)
    print(f"\nranges predictions print: x{figures.low:.2f} to x{figures.high:.2f} (leave one GPU "
          f"out, middle 80 %); options closer than {figures.relative_error:.1%} relative error "
          "(leave one source out, 80th percentile) are not ranked")  # fmt: skip
    if args.write:
        print(f"wrote {write(figures)}")
        print(f"wrote {write_shipped(fit_calibration(points))}")
    print(f"({time.perf_counter() - start:.0f} s)")
    assert math.isfinite(figures.relative_error)


if __name__ == "__main__":
    main()
