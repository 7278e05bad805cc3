"""``gpuscout predict``: speed on catalog GPUs, one and many, from the step's cost profile."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from gpuscout.cli.parser import positive_int
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.errors import UserError
from gpuscout.names import PRECISIONS

DEFAULT_GPUS = "rtx-3090,rtx-4090,a100-40gb-sxm,a100-80gb-sxm,h100-sxm"


def _counts(text: str) -> list[int]:
    try:
        counts = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of whole numbers") from None
    if not counts or any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError(f"GPU counts must be >= 1, got '{text}'")
    return counts


def register(sub: Any) -> None:
    p = sub.add_parser("predict", help="training speed on GPUs you don't have, 1..N of them")
    p.add_argument("--workload", required=True, help="mlp, cnn-small, resnet50, bert-base")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("-b", "--batch-size", type=positive_int, help="per GPU (default: workload's)")
    p.add_argument("--seq-len", type=positive_int, help="sequence length (bert-base)")
    p.add_argument("--gpus", default=DEFAULT_GPUS, help=f"comma list or 'all' ({DEFAULT_GPUS})")
    p.add_argument("--count", type=_counts, default=[1], help="GPU counts, e.g. 1,4,8")
    p.add_argument("--reference", default="rtx-3090", help="relative speeds against this GPU")
    p.add_argument("--from-run", type=positive_int, metavar="ID", help="anchor on a stored run")
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_predict)


def _measured(args: argparse.Namespace, profile: Any, catalog: Any) -> dict[str, float]:
    """Median measured samples/s per catalog GPU among matching stored runs."""
    from gpuscout.store import Store

    found: dict[str, list[float]] = {}
    with Store(args.db) as store:
        for row in store.list():
            if (row.status, row.workload, row.precision, row.batch_size) != (
                "ok",
                profile.workload,
                profile.precision,
                profile.batch,
            ):
                continue
            run = store.get(row.id)
            gpu = catalog.find_device(str(run.env.get("device_name") or run.device))
            if gpu is not None and run.samples_per_second is not None:
                found.setdefault(gpu.id, []).append(run.samples_per_second.median)
    return {k: statistics.median(v) for k, v in found.items()}


def _check_precision(gpus: list[Any], precision: str) -> None:
    """Naming a GPU that lacks the precision's tensor cores is a mistake worth stopping on."""
    from gpuscout.catalog import peak_tflops

    for gpu in gpus:
        rate = peak_tflops(gpu, precision)[1]
        if "no " in rate:
            kind = {"mixed_bfloat16": "BF16", "mixed_float16": "FP16"}.get(precision, precision)
            raise UserError(
                f"{gpu.id} has no {kind} tensor cores: {precision} would run at its FP32 "
                "rate, which is not what you would choose on it.",
                f"use --precision mixed_float16 for {gpu.id}, or leave it out of --gpus "
                "('--gpus all' predicts it anyway, marked).",
            )


def run_predict(args: argparse.Namespace) -> int:
    from gpuscout.catalog import load_catalog
    from gpuscout.measure.workloads import get_workload
    from gpuscout.predict import anchor_from_run, predict
    from gpuscout.predict.profile import get_profile

    catalog = load_catalog(args.catalog)
    workload = get_workload(args.workload)
    dims = {"seq_len": args.seq_len} if args.seq_len else {}
    batch = args.batch_size or workload.default_batch_gpu
    names = [g for g in args.gpus.split(",") if g.strip()]
    if names == ["all"]:
        gpus = list(catalog.gpus.values())
    else:
        gpus = list({g.id: g for g in (catalog.resolve(n).gpu for n in names)}.values())
    reference = catalog.resolve(args.reference).gpu
    if names != ["all"]:
        _check_precision(gpus, args.precision)
    profile = get_profile(workload.name, workload.resolve(dims), batch, args.precision)
    anchor = None
    if args.from_run:
        from gpuscout.store import Store

        with Store(args.db) as store:
            anchor = anchor_from_run(store.get(args.from_run), profile, catalog)
    rows, notes = predict(
        profile,
        gpus,
        args.count,
        catalog,
        reference,
        workload.epoch_samples,
        anchor=anchor,
        measured=_measured(args, profile, catalog),
    )
    notes.append(f"epoch = {workload.epoch_samples:,} {workload.epoch_unit}")
    if args.json:
        out = [r.to_json_dict() | {"common_assumptions": notes} for r in rows]
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.predict_table import prediction_table

    console = stdout_console()
    console.print(prediction_table(rows, profile, reference.id, workload.epoch_unit))
    extra = sorted({a for r in rows for a in r.assumptions})
    for line in [*notes, *extra]:
        console.print(f"assumption: {line}", highlight=False)
    if not any(r.fits_memory for r in rows):
        raise UserError("the step fits on none of these GPUs.", "lower --batch-size.")
    return 0
