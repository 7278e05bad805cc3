"""How wrong are predictions for a GPU the model has never seen? Leave-one-GPU-out.

For each GPU in the calibration data (the catalog's published single-GPU training
measurements): fit the roofline efficiencies without any of that GPU's measurements, predict
them, and compare.

- absolute: predicted vs measured samples/s;
- relative: predicted vs measured speed *relative to another GPU measured by the same source*
  (same software, same benchmark), which is what an anchored prediction depends on. The
  reference is the RTX 3090 where the source has it, else its first other GPU.

Prints the mean absolute percentage error per workload and precision, and overall.

    python benchmarks/prediction_accuracy.py
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from gpuscout.catalog import load_catalog
from gpuscout.predict.calibrate import Point, fit_calibration, published_points
from gpuscout.predict.roofline import samples_per_second


def _key(p: Point) -> tuple[str, str, str]:
    return (
        p.source_id,
        p.profile.workload + str(p.profile.dims.get("layers", "")),
        p.profile.precision,
    )


def main() -> None:
    points = published_points(load_catalog())
    gpus = sorted({p.gpu.id for p in points})
    absolute: dict[str, list[float]] = defaultdict(list)
    relative: dict[str, list[float]] = defaultdict(list)
    for held_out in gpus:
        train = [p for p in points if p.gpu.id != held_out]
        eff = fit_calibration(train).efficiency
        for p in (p for p in points if p.gpu.id == held_out):
            group = f"{p.workload} {p.profile.precision}"
            predicted = samples_per_second(p.profile, p.gpu, eff)
            absolute[group].append(abs(predicted / p.measured - 1))
            peers = [q for q in train if _key(q) == _key(p)]
            if not peers:
                continue
            ref = next((q for q in peers if q.gpu.id == "rtx-3090"), peers[0])
            ref_pred = samples_per_second(ref.profile, ref.gpu, eff)
            rel_err = (predicted / ref_pred) / (p.measured / ref.measured) - 1
            relative[group].append(abs(rel_err))
    full = fit_calibration(points)
    print(f"calibration: {len(points)} published single-GPU measurements, {len(gpus)} GPUs")
    print(f"fit on all of them: {full.describe()}")
    in_sample = [abs(2.718281828**e - 1) for e in full.log_errors]
    print(f"in-sample error: {statistics.mean(in_sample):.1%} mean absolute\n")
    print("leave-one-GPU-out, mean absolute percentage error (n = measurements):")
    print(f"  {'workload / precision':34s} {'relative speed':>16s} {'absolute':>12s}")
    for group in sorted(absolute):
        rel = relative.get(group, [])
        rel_text = f"{statistics.mean(rel):.1%} (n={len(rel)})" if rel else "-"
        abs_text = f"{statistics.mean(absolute[group]):.1%} (n={len(absolute[group])})"
        print(f"  {group:34s} {rel_text:>16s} {abs_text:>12s}")
    all_rel = [e for v in relative.values() for e in v]
    all_abs = [e for v in absolute.values() for e in v]
    print(
        f"  {'all':34s} {statistics.mean(all_rel):>10.1%} (n={len(all_rel)})"
        f" {statistics.mean(all_abs):>6.1%} (n={len(all_abs)})"
    )


if __name__ == "__main__":
    main()
