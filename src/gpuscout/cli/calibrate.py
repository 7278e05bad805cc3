"""``gpuscout calibrate``: the prediction model's fitted efficiencies and how well they fit."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpuscout.cli.output import print_json
from gpuscout.cli.specs import add_catalog_arg


def register(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate",
        help="the prediction model's fit to published data, and which stored runs anchor",
        description="Show the fit every prediction uses: the efficiencies fitted to published "
        "GPU measurements (and your own rows, --catalog), each point's measured and modelled "
        "speed and its error, the traffic factor of each software stack and each --stack "
        "level, the assumed overheads with their sources, the out-of-sample error band that "
        "predictions quote as their range, and the GPU runs in your results database that "
        "anchor predictions of their step: the same fit predict, cost, advise, scout and "
        "report use.",
    )
    p.add_argument(
        "--db",
        help="results database whose GPU runs anchor predictions (default: GPUSCOUT_DB or the "
        "user data dir)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    from gpuscout.catalog import load_catalog
    from gpuscout.predict.calibration_points import user_rows_used
    from gpuscout.predict.efficiency import overheads
    from gpuscout.predict.identification import identification, lines
    from gpuscout.predict.out_of_sample import shipped
    from gpuscout.predict.session import session
    from gpuscout.predict.stacks import levels
    from gpuscout.predict.uncertainty import band, relative_error

    catalog = load_catalog(args.catalog)
    model = session(catalog, args.db)  # the fit every command predicts with
    result = model.calibration
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
    ranged, figures = band(), shipped()
    stack_levels = {name: result.traffic(level) for name, level in levels().items()}
    if args.json:
        out = {
            "efficiency": vars(result.efficiency),
            "stacks": result.stacks,
            "stack_levels": {k: {"traffic": v[0], "from": v[1]} for k, v in stack_levels.items()},
            "parameters": identification(result),
            "assumed": {k: vars(v) for k, v in overheads().items()},
            "out_of_sample": {
                "range": [ranged.low, ranged.high],
                "range_is": ranged.label,
                "no_stored_runs": figures.source_absolute,
                "anchored_on_your_runs": figures.chip_relative,
                "not_validated": figures.unvalidated,
                "relative_error": relative_error(),
            },
            "fit": result.describe(),
            "points": rows,
            "left_out": list(model.left_out),
            "user_catalog": user_rows,
            "stored_runs": list(model.run_ids),  # your runs that may anchor a prediction
            "notes": model.notes,
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
    console.print(
        f"these are in-sample errors; predictions use out-of-sample ones: x{ranged.low:.2f} to "
        f"x{ranged.high:.2f} ({ranged.label}), {relative_error():.0%} on relative speed "
        "(sources left out); python benchmarks/prediction_accuracy.py shows them",
        highlight=False,
    )
    for line in lines(result):
        console.print(line, highlight=False)
    for name, cost in overheads().items():
        console.print(f"assumed {name} = {cost.value:g} {cost.unit}: {cost.source}",
                      highlight=False)  # fmt: skip
    console.print(
        "assumption: each published row is modelled at its own batch per GPU (the shipped "
        "profile rescaled exactly); a row whose source states no batch at the profile's "
        "(batch measured ?)",
        highlight=False,
    )
    for name, (traffic, whose) in stack_levels.items():
        console.print(f"stack level {name}: DRAM traffic x{traffic:.2f} ({whose})",
                      highlight=False)  # fmt: skip
    ids = model.run_ids
    if ids:
        console.print(
            f"your stored GPU runs {', '.join(map(str, ids))} anchor predictions of the step "
            "each measured (same workload or model, precision); they are not fitted to",
            highlight=False,
        )
    for note in model.notes:
        console.print(note, highlight=False)
    return 0
