"""``gpuscout calibrate``: the prediction model's fitted efficiencies and how well they fit."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpuscout.cli.output import print_json
from gpuscout.cli.specs import add_catalog_arg


def register(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate", help="fit the prediction model to published data and your stored GPU runs"
    )
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    from gpuscout.catalog import load_catalog
    from gpuscout.cli.predict import stored_runs
    from gpuscout.predict.calibrate import calibration_for
    from gpuscout.predict.calibration_points import run_points, user_rows_used

    catalog = load_catalog(args.catalog)
    mine, left_out = run_points(stored_runs(args.db), catalog)
    result = calibration_for(catalog, mine)
    user_rows = user_rows_used(catalog, result.points)
    rows = [
        {
            "point": p.label,
            "measured_batch": p.measured_batch,
            "modelled_batch": p.modelled_batch,
            "measured": p.measured,
            "modelled": p.measured * math.exp(err),
            "error": math.exp(err) - 1,
        }
        for p, err in zip(result.points, result.log_errors, strict=True)
    ]
    if args.json:
        out = {
            "efficiency": vars(result.efficiency),
            "stacks": result.stacks,
            "out_of_sample": {"range": result.spread(), "relative_error": result.relative_error()},
            "fit": result.describe(),
            "points": rows,
            "left_out": left_out,
            "user_catalog": user_rows,
        }
        print_json(out)
        return 0
    from rich.table import Table

    from gpuscout.report.console import stdout_console

    table = Table(title=f"gpuscout calibrate · {result.describe()}", title_justify="left")
    columns = ("measurement", "batch measured", "batch modelled", "measured /s", "modelled /s")
    for name in (*columns, "error"):
        table.add_column(name, justify="left" if name == "measurement" else "right")
    for row in rows:
        table.add_row(
            str(row["point"]),
            "?" if row["measured_batch"] is None else str(row["measured_batch"]),
            str(row["modelled_batch"]),
            f"{row['measured']:,.0f}",
            f"{row['modelled']:,.0f}",
            f"{row['error']:+.0%}",
        )
    console = stdout_console()
    console.print(table)
    low, high = result.spread()
    console.print(
        f"these are in-sample errors; predictions use out-of-sample ones: x{low:.2f} to "
        f"x{high:.2f} (GPUs left out of the fit), {result.relative_error():.0%} on relative "
        "speed (sources left out); python benchmarks/prediction_accuracy.py shows them",
        highlight=False,
    )
    console.print(
        "assumption: each published row is modelled at its own batch per GPU (the shipped "
        "profile rescaled exactly); a row whose source states no batch at the profile's "
        "(batch measured ?)",
        highlight=False,
    )
    for note in [*user_rows, *left_out]:
        console.print(note, highlight=False)
    return 0
