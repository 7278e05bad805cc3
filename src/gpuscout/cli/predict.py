"""``gpuscout predict``: speed on catalog GPUs, one and many, from the step's cost profile."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from gpuscout.articles import REFERENCE_GPU
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    EPOCH_SAMPLES,
    GPU_COUNTS,
    NETWORK_GBIT,
    RUN_ID,
    SEQ_LEN,
    add_backend_option,
    gpu_names,
    model_spec,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.errors import UserError
from gpuscout.run_settings import PRECISIONS, TF32_HELP, ran_with_tf32, tf32_prediction_note

DEFAULT_GPUS = "rtx-3090,rtx-4090,a100-40gb-sxm,a100-80gb-sxm,h100-sxm"


def register(sub: Any) -> None:
    p = sub.add_parser("predict", help="training speed on GPUs you don't have, 1..N of them")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--workload",
        help="mlp, cnn-small, resnet50, bert-base, bert-large, gpt2, gpt2-medium, gpt2-large",
    )
    what.add_argument("--model", type=model_spec, help="your model: FILE.py:FUNCTION or FILE.keras")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    add_backend_option(p, "traces the step")
    p.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True, help=TF32_HELP)
    p.add_argument("--mode", choices=("train", "inference"), default="train",
                   help="inference: a forward pass per batch (traced once, with TF)")  # fmt: skip
    p.add_argument("-b", "--batch-size", type=BATCH, help="per GPU (default: workload's)")
    p.add_argument("--seq-len", type=SEQ_LEN, help="sequence length (bert-*, gpt2*: at most 1024)")
    p.add_argument(
        "--gpus", type=gpu_names, default=DEFAULT_GPUS,
        help=f"comma list or 'all' ({DEFAULT_GPUS})",
    )  # fmt: skip
    p.add_argument(
        "--count",
        type=GPU_COUNTS,
        default=[(1, 1)],
        help="GPU counts, e.g. 1,4,8, or nodes x GPUs 2x8",
    )
    p.add_argument(
        "--network", type=NETWORK_GBIT, default=100.0, metavar="GBIT",
        help="network between nodes, Gb/s per node (default 100)",
    )  # fmt: skip
    p.add_argument("--epoch-samples", type=EPOCH_SAMPLES, help="epoch size (default: workload's)")
    p.add_argument("--reference", default=REFERENCE_GPU, help="relative speeds against this GPU")
    p.add_argument("--from-run", type=RUN_ID, metavar="ID", help="anchor on a stored run")
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument(
        "--breakdown", action="store_true",
        help="also show where one GPU's step goes: compute-, memory- and launch-bound kernels",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_predict)


def stored_runs(db: str | None) -> list[Any]:
    """Every successful stored run, in full (for measured values and calibration)."""
    from gpuscout.store import Store, database_exists

    if not database_exists(db):  # nothing measured yet: predict from the catalog alone
        return []
    with Store(db, readonly=True) as store:
        return [store.get(row.id) for row in store.list() if row.status == "ok"]


def _measured(
    runs: list[Any], profile: Any, catalog: Any, tf32: bool = True
) -> tuple[dict[tuple[str, int], float], dict[tuple[str, int], float]]:
    """Medians of what stored runs of this very profile measured, per (catalog GPU, count in
    one machine): samples/s, and the scaling efficiency of ``bench --scaling`` runs. In fp32,
    only runs with the prediction's TF32 setting: the other one measured other matmuls."""
    speeds: dict[tuple[str, int], list[float]] = {}
    scaling: dict[tuple[str, int], list[float]] = {}
    for run in runs:
        same = (run.workload, run.precision, run.per_replica_batch) == (
            profile.workload, profile.precision, profile.batch
        )  # fmt: skip
        gpu = catalog.find_device(str(run.env.get("device_name") or ""))
        spread = run.distribution
        if profile.precision == "fp32" and ran_with_tf32(run.env, run.config.tf32) != tf32:
            continue
        if not same or gpu is None or run.samples_per_second is None or run.mode != "train":
            continue
        if spread is not None and (spread.workers > 1 or spread.logical_devices):
            continue  # several machines, or CPU devices: not a count of GPUs in one machine
        key = (gpu.id, run.replicas)
        speeds.setdefault(key, []).append(run.samples_per_second.median)
        efficiency = spread.scaling.efficiency if spread and spread.scaling else None
        if efficiency and spread and spread.scaling and spread.scaling.base_replicas == 1:
            scaling.setdefault(key, []).append(efficiency.median)  # against 1 GPU, as predicted
    return (
        {k: statistics.median(v) for k, v in speeds.items()},
        {k: statistics.median(v) for k, v in scaling.items()},
    )


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


def _tf32_notes(args: argparse.Namespace) -> list[str]:
    """The TF32 assumption line, when there is one (see tf32_prediction_note)."""
    note = tf32_prediction_note(args.precision, args.tf32)
    return [note] if note else []


def _predict_inference(args: argparse.Namespace) -> int:
    """One GPU's forward pass per batch: serving throughput and the model's share of latency."""
    from gpuscout.catalog import load_catalog
    from gpuscout.predict import predict
    from gpuscout.predict.calibrate import calibration_for
    from gpuscout.predict.calibration_points import user_rows_used
    from gpuscout.predict.profile_trace import get_forward_profile

    if args.count != [(1, 1)] or args.from_run:
        raise UserError(
            "--mode inference predicts one GPU, without --count or --from-run.",
            "serving scales by adding replicas: divide your load by one GPU's samples/s.",
        )
    catalog = load_catalog(args.catalog)
    batch = args.batch_size or 1
    dims = {"seq_len": args.seq_len} if args.seq_len else {}
    if args.workload:  # before tracing: no GPU holds the step's largest activation
        from gpuscout.limits import check_fits_a_gpu
        from gpuscout.workloads import get_workload

        resolved = get_workload(args.workload).resolve(dims)
        check_fits_a_gpu(args.workload, resolved, batch, args.precision, "forward", catalog)
    profile = get_forward_profile(
        args.workload, args.model, dims, batch, args.precision, _backend(args)
    )
    names = [g for g in args.gpus.split(",") if g.strip()]
    gpus = (
        list(catalog.gpus.values())
        if names == ["all"]
        else list({g.id: g for g in (catalog.resolve(n).gpu for n in names)}.values())
    )
    reference = catalog.resolve(args.reference).gpu
    calibration = calibration_for(catalog)
    rows, common = predict(
        profile, gpus, [1], catalog, reference, 1, calibration=calibration, tf32=args.tf32
    )
    notes = [
        "inference, predicted: one forward pass per request batch, as 'bench --mode "
        "inference' times it, without serving overhead, queueing or host transfers; measure "
        "those with bench --mode inference",
        "no kernel-launch or framework time per layer: at small batches that dominates "
        "(microseconds per op on a GPU), so small-batch latency is a lower bound",
        f"batch {batch} per request" + ("" if args.batch_size else " (set it with --batch-size)"),
        "efficiencies fitted to published *training* measurements, applied to the forward pass",
        *(c for c in common if not c.startswith(("memory:", "several GPUs"))),
        "memory: the weights (a forward pass keeps no activations for a backward pass)",
        *_tf32_notes(args),
        *user_rows_used(catalog, calibration.points),
    ]
    if args.json:
        out = [r.to_json_dict() | {"mode": "inference", "latency_s": profile.batch /
               r.samples_per_second, "common_assumptions": notes} for r in rows]  # fmt: skip
        print_json(out)
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.predict_table import inference_table

    console = stdout_console()
    console.print(inference_table(rows, profile, reference.id))
    for line in notes:
        console.print(f"assumption: {line}", highlight=False)
    return 0


def _backend(args: argparse.Namespace) -> str:
    """The backend to trace on; JAX's absence is one line before anything is traced."""
    if args.backend == "jax":
        from gpuscout.measure.backends import require_jax

        require_jax("predict --backend jax")
    return str(args.backend)


def run_predict(args: argparse.Namespace) -> int:
    if args.mode == "inference":
        return _predict_inference(args)
    from gpuscout.catalog import load_catalog
    from gpuscout.limits import check_fits_a_gpu
    from gpuscout.predict import anchor_from_run, predict
    from gpuscout.predict.profile_trace import get_profile
    from gpuscout.workloads import get_workload

    catalog = load_catalog(args.catalog)
    notes: list[str] = []
    if args.model:
        from gpuscout.predict.profile_trace import get_user_profile

        batch = args.batch_size or 32
        if not args.batch_size:
            notes.append(f"batch {batch} per GPU for your model (set it with --batch-size)")
        profile = get_user_profile(args.model, batch, args.precision, _backend(args))
        epoch, unit = args.epoch_samples or 1_000_000, "samples"
        if not args.epoch_samples:
            notes.append("epoch = 1,000,000 samples (set it with --epoch-samples)")
    else:
        workload = get_workload(args.workload)
        dims = {"seq_len": args.seq_len} if args.seq_len else {}
        batch = args.batch_size or workload.default_batch_gpu
        resolved = workload.resolve(dims)
        check_fits_a_gpu(workload.name, resolved, batch, args.precision, "train", catalog)
        profile = get_profile(workload.name, resolved, batch, args.precision, _backend(args))
        epoch, unit = args.epoch_samples or workload.epoch_samples, workload.epoch_unit
    names = [g for g in args.gpus.split(",") if g.strip()]
    if names == ["all"]:
        gpus = list(catalog.gpus.values())
    else:
        gpus = list({g.id: g for g in (catalog.resolve(n).gpu for n in names)}.values())
    reference = catalog.resolve(args.reference).gpu
    from gpuscout.predict.scaling import check_machine

    for gpu in gpus:  # 16 SXM GPUs are two machines: say so rather than predict one
        for nodes, per_node in args.count:
            check_machine(gpu, nodes, per_node)
    if names != ["all"]:
        _check_precision(gpus, args.precision)
    runs = stored_runs(args.db)
    from gpuscout.predict.calibrate import calibration_for
    from gpuscout.predict.calibration_points import run_points, user_rows_used

    mine, left_out = run_points(runs, catalog)
    calibration = calibration_for(catalog, mine)
    notes += user_rows_used(catalog, calibration.points)
    if mine:
        notes.append(f"calibration includes {len(mine)} of your stored GPU runs")
    notes += left_out
    anchor = None
    if args.from_run:
        from gpuscout.store import Store

        with Store(args.db, readonly=True) as store:
            anchor = anchor_from_run(store.get(args.from_run), profile, catalog, args.tf32)
    measured, measured_scaling = _measured(runs, profile, catalog, args.tf32)
    if measured_scaling:
        notes.append(
            "measured scaling: efficiency from your 'bench --scaling' runs on that GPU "
            "(same workload, precision and batch per GPU), against their 1-GPU run"
        )
    rows, common = predict(
        profile,
        gpus,
        args.count,
        catalog,
        reference,
        epoch,
        anchor=anchor,
        measured=measured,
        measured_scaling=measured_scaling,
        calibration=calibration,
        network_gbit=args.network,
        tf32=args.tf32,
    )
    notes = [*notes, *common, *_tf32_notes(args), f"epoch = {epoch:,} {unit}"]
    if args.json:
        out = [r.to_json_dict() | {"common_assumptions": notes} for r in rows]
        print_json(out)
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.predict_table import prediction_table

    console = stdout_console()
    console.print(prediction_table(rows, profile, reference.id, unit))
    if args.breakdown:
        from gpuscout.report.predict_table import breakdown_table

        console.print(breakdown_table(rows, profile))
    extra = sorted({a for r in rows for a in r.assumptions})
    for line in [*notes, *extra]:
        console.print(f"assumption: {line}", highlight=False)
    if not any(r.fits_memory for r in rows):
        raise UserError("the step fits on none of these GPUs.", "lower --batch-size.")
    return 0
