"""``gpuscout soak``: train for N minutes and say whether the run stayed fast and correct."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from typing import Any

from gpuscout.cli.doctor import add_target_options, target_fields
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import DRIFT, SOAK_MINUTES

# 4, not 0: an inconclusive soak has not shown the run stays fast, so a script that gates on
# 'soak && deploy' must not go on; not 1 either, since no fault was shown (rerun, don't repair).
EXIT = {"pass": 0, "fail": 1, "incomplete": 3, "inconclusive": 4}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "soak",
        help="long-run stability: throughput drift, throttling, ECC/XID, NaN loss, OOM",
        description="Train a workload for --minutes and end with a verdict and the evidence. "
        "FAIL: a NaN/Inf loss, a crash or out-of-memory, uncorrected ECC or XID errors, or "
        "throughput shown, beyond the machine's own noise, to have sunk by more than "
        "--max-drift. PASS: none of these, and "
        "the machine's measured noise rules out a drop beyond --max-drift. INCONCLUSIVE: the "
        "noise could hide such a drop (it says by how much, and how much longer, or how much "
        "quieter a machine, would decide it). Ctrl-C stops early and keeps what was measured "
        "(INCOMPLETE). Exit code: 0 pass, 1 fail, 3 incomplete, 4 inconclusive. Every soak is "
        "stored as a run.",
        epilog="e.g. gpuscout soak --minutes 60 --workload resnet50 --max-drift 0.05",
    )
    add_target_options(p, data=False)
    p.add_argument(
        "--minutes",
        type=SOAK_MINUTES,
        default=10.0,
        help="how long to train, in minutes (default 10, at most a week: 10080); the first "
        "and last windows compared are each 10%% of it (5 s to 10 min), and a run under "
        "a minute may be too short to measure the machine's noise",
    )
    p.add_argument(
        "--max-drift",
        type=DRIFT,
        default=0.10,
        metavar="FRACTION",
        help="the slowdown to test for, a fraction: 0.10 (the default) fails a run whose last "
        "window is shown, beyond the noise, to be more than 10%% slower than its first, and "
        "passes one only when a drop that large is ruled out",
    )
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuscout.cli.parser import resolved_backend

    # a plain PyTorch --model (its file imports torch, not Keras) is soaked on PyTorch
    args.backend = resolved_backend(args.backend, args.model)
    from rich.console import Console

    from gpuscout.diagnose.records import SoakConfig
    from gpuscout.diagnose.soak import soak
    from gpuscout.report.console import stdout_console
    from gpuscout.report.soak_view import print_soak, progress_text
    from gpuscout.store import Store

    config = SoakConfig(**target_fields(args), minutes=args.minutes, max_drift=args.max_drift)
    store = Store(args.db)  # a bad --db fails before an hour of soaking, not after
    err = Console(stderr=True)
    live = err.is_terminal and not args.quiet and not args.json
    with err.status("soak: starting", spinner="dots") if live else nullcontext() as status:

        def show(message: dict[str, Any]) -> None:
            if status is not None:
                status.update(progress_text(message))
            elif "phase" in message and not args.quiet:  # stderr: never mixes with --json
                print(f"soak: {message['phase']}", file=sys.stderr, flush=True)

        report, result = soak(config, on_progress=show)
    result = store.save(result)
    store.close()
    if args.json:
        print_json({"run_id": result.id, **report.model_dump(mode="json")})
    else:
        print_soak(report, result.id, stdout_console())
    return EXIT[report.verdict]
