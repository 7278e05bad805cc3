"""How wrong are predictions on data the model was not fitted to? All of it out of sample.

1. Kernel level: the kernel model (learned from NeuSight's 155,764 measured kernels on five
   GPUs) with each GPU left out in turn, mean absolute percentage error per op type. Read from
   the shipped fit, which ``python scripts/fit_kernel_model.py`` recomputes (about 1.5 min).
2. End to end, on the published single-GPU training rows, each modelled at its own batch:
   - leave one whole source out: absolute speed (the range without stored runs) and speed
     relative to the source's other GPUs (what a ranking depends on), per workload family;
   - leave one chip out: relative speed (the range with stored runs);
   - leave one GPU id out (a same-chip twin stays in: reported, never a range);
   - the frozen test split, fitted on the rest: reported apart, never tuned on;
   - leave the newest architectures out: fit on Ampere and older, predict Ada, Hopper and
     Blackwell (absolute, and relative to the older GPUs of the same source).
3. Scaling: leave-one-row-out mean absolute error in points of efficiency over the published
   multi-GPU rows, from the shipped fit (``python scripts/fit_scaling.py`` recomputes it).

    python benchmarks/prediction_accuracy.py           # print
    python benchmarks/prediction_accuracy.py --write   # and store the fit and the figures
                                                       # predictions use (predict/data/)
    python benchmarks/prediction_accuracy.py --pytorch-traced torch   # or torch-eager
        # the published PyTorch rows modelled from their networks written in plain PyTorch and
        # traced from torch (examples/models/torch_resnet50.py, torch_bert.py) instead of the
        # Keras models: the same splits, then the PyTorch rows' figures apart (never --write)
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
from gpuscout.predict.bands import coverage
from gpuscout.predict.calibrate import fit_calibration, write_shipped
from gpuscout.predict.calibration_points import published_points, torch_traced_missing
from gpuscout.predict.out_of_sample import (
    FROZEN_CHIPS,
    FROZEN_SOURCES,
    NEWEST,
    Figures,
    Held,
    development,
    family,
    frozen_test,
    leave_newest_out,
    leave_one_chip_out,
    leave_one_gpu_out,
    leave_one_source_out,
    mape,
    measured_on,
    shipped,
    write,
)

FIGURES: Figures  # computed in main() before the tables that show coverage


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


def _table(title: str, held: Sequence[Held], bands: dict[str, tuple[float, float]] | None = None,
           relative: bool = False) -> None:  # fmt: skip
    """MAPE per workload family; with ``bands``, the share of held-out outcomes (absolute, or
    ``relative``) inside the band predictions print for that family."""
    by: dict[str, list[Held]] = defaultdict(list)
    for h in held:
        by[family(h.point)].append(h)
        by["all"].append(h)
    print(f"   {title}")
    print(f"   {'workload':12s} {'relative speed':>18s} {'absolute':>16s}"
          + (f" {'band':>13s} {'inside':>7s}" if bands else ""))  # fmt: skip
    for name in sorted(by, key=lambda k: (k == "all", k)):
        rel = [h.relative for h in by[name] if h.relative is not None]
        ab = [h.absolute for h in by[name]]
        rel_text = f"{mape(rel):.1%} (n={len(rel)})" if rel else "-"
        line = f"   {name:12s} {rel_text:>18s} {mape(ab):>7.1%} (n={len(ab)})"
        if bands:
            inside = [
                coverage([h.relative if relative else h.absolute], bands[family(h.point)])
                for h in by[name]
                if family(h.point) in bands and (h.relative is not None or not relative)
            ]
            band = bands.get(name)
            shown = f"x{band[0]:.2f}-x{band[1]:.2f}" if band else "per family"
            line += f" {shown:>13s} {sum(inside) / max(1, len(inside)):>7.0%}"
        print(line)


def _nested(split: str) -> None:
    """How wide each family's band is, and what it covered of groups left out of it too."""
    for key, level in sorted(FIGURES.levels.items()):
        if key.startswith(split + ":"):
            print(f"   {key.split(':')[1]} band: the middle {level:.0f} % of the held-out errors; "
                  f"it covers {FIGURES.nested[key]:.0%} of a {split} left out of the band as "
                  "well as the fit")  # fmt: skip


def end_to_end(points: Sequence) -> tuple[list[Held], list[Held]]:  # type: ignore[type-arg]
    dev = development(points)
    full = fit_calibration(dev)
    in_sample = mape(full.log_errors)
    gpus, sources = len({p.gpu.id for p in dev}), len({p.source_id for p in dev})
    chips = len({p.gpu.chip for p in dev})
    print(f"\n2. end to end, development rows: {len(dev)} published single-GPU rows, {gpus} "
          f"GPUs, {chips} chips, {sources} sources (the frozen test split's "
          f"{len(points) - len(dev)} rows left out)")  # fmt: skip
    print(f"   fit on all of them: {full.describe()}")
    print(f"   in-sample error {in_sample:.1%} (for reference only: never a measure of accuracy)")
    by_source, by_chip = leave_one_source_out(dev), leave_one_chip_out(dev)
    _table("leave one whole source out (band printed without stored runs):",
           by_source, FIGURES.source_absolute)  # fmt: skip
    _nested("source")
    _table("leave one chip out (band printed with stored runs: relative):",
           by_chip, FIGURES.chip_relative, relative=True)  # fmt: skip
    _nested("chip")
    _table("leave one GPU id out (a same-chip twin stays in: flattering, no band):",
           leave_one_gpu_out(dev))  # fmt: skip
    _table(f"fit on Ampere and older, predict {', '.join(NEWEST)}:", leave_newest_out(dev))
    test = frozen_test(points)
    print(
        f"\n   FROZEN TEST SPLIT (chips {', '.join(FROZEN_CHIPS)}; source "
        f"{', '.join(FROZEN_SOURCES)}): fit on the development rows, never tuned on"
    )
    _table("frozen test, absolute against the no-stored-runs band:", test,
           FIGURES.source_absolute)  # fmt: skip
    return by_source, by_chip


def pytorch_rows(points: Sequence, by_source: Sequence[Held], by_chip: Sequence[Held]) -> None:  # type: ignore[type-arg]
    """The published PyTorch rows' held-out figures apart (each held out among all the rows,
    as above): inside the bands made from these points, and inside the shipped bands (what
    ``predict`` prints today, made from the Keras-traced profiles)."""
    src, chip = measured_on(by_source, "pytorch"), measured_on(by_chip, "pytorch")
    print(f"\n   PUBLISHED PYTORCH ROWS ({len(src)} development rows), held out as above:")
    _table("leave one whole source out, bands made from these points:", src,
           FIGURES.source_absolute)  # fmt: skip
    _table("leave one whole source out, the shipped bands:", src, shipped().source_absolute)
    _table("leave one chip out (relative), bands made from these points:", chip,
           FIGURES.chip_relative, relative=True)  # fmt: skip
    _table("leave one chip out (relative), the shipped bands:", chip, shipped().chip_relative,
           relative=True)  # fmt: skip
    _table("frozen test split's PyTorch rows (reported apart, never tuned on):",
           measured_on(frozen_test(points), "pytorch"), FIGURES.source_absolute)  # fmt: skip


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
    parser.add_argument(
        "--pytorch-traced",
        choices=("tensorflow", "torch", "torch-eager"),
        default="tensorflow",
        help="whose trace models the published PyTorch rows: the Keras model's (shipped fit), "
        "or the plain-PyTorch model's captured from torch, its kernels fused as XLA would "
        "(torch) or op by op as eager PyTorch runs them (torch-eager)",
    )
    args = parser.parse_args(argv)
    if args.write and args.pytorch_traced != "tensorflow":
        parser.error("--write stores the shipped fit, which is fitted with the Keras-traced "
                     "profiles: drop --pytorch-traced to write")  # fmt: skip
    start = time.perf_counter()
    catalog = load_catalog()
    points = published_points(catalog, args.pytorch_traced)
    global FIGURES
    FIGURES = Figures.of(points)
    if args.pytorch_traced != "tensorflow":
        missing = torch_traced_missing(catalog)
        print(f"PyTorch rows modelled from torch-traced profiles; {len(missing)} without one "
              f"left out{': ' + '; '.join(missing) if missing else ''}")  # fmt: skip
    kernel_level()
    pytorch_rows(points, *end_to_end(points))
    scaling()
    f = FIGURES
    print("\nranges predictions print (per family, each as wide as covers 80 % of a group left "
          "out of the band as well as the fit): no stored runs (whole sources "
          "left out) " + ", ".join(f"{k} x{v[0]:.2f}-x{v[1]:.2f}"
                                   for k, v in f.source_absolute.items())
          + "; with stored runs (chips left out, relative) "
          + ", ".join(f"{k} x{v[0]:.2f}-x{v[1]:.2f}" for k, v in f.chip_relative.items())
          + f"; not validated x{f.unvalidated[0]:.2f}-x{f.unvalidated[1]:.2f} (the widest); "
          f"options closer than {f.relative_error:.1%} relative error (sources left out, 80th "
          "percentile) are not ranked")  # fmt: skip
    if args.write:
        print(f"wrote {write(f)}")
        print(f"wrote {write_shipped(fit_calibration(points))}")
    print(f"({time.perf_counter() - start:.0f} s)")
    assert math.isfinite(f.relative_error)


if __name__ == "__main__":
    main()
