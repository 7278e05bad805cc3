"""``gpuscout advise`` (quick checklist or full recommendation) and ``gpuscout memory``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    BUDGET_USD,
    DEADLINE,
    EPOCHS,
    GPU_COUNT_CHOICES,
    HEADS,
    HIDDEN,
    LAYERS,
    LORA_RANK,
    PARAMS,
    SAMPLES,
    SEQ_LEN,
    TOP,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.errors import UserError
from gpuscout.run_settings import PRECISIONS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "advise", help="which GPU: the articles' checklist, or a full recommendation"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the four-question checklist of articles 000 and 002 (gpuscout.articles)",
    )
    p.add_argument("--answers", help="yes/no x4 in order, e.g. yes,no,yes,no (else asked)")
    p.add_argument("--workload", help="a built-in workload for the full recommendation")
    p.add_argument("--epochs", type=EPOCHS)
    p.add_argument("--samples", type=SAMPLES)
    p.add_argument("--precision", choices=PRECISIONS, default="mixed_float16")
    p.add_argument("-b", "--batch-size", type=BATCH)
    p.add_argument("--deadline", type=DEADLINE, help="e.g. 48h, 2d")
    p.add_argument("--budget", type=BUDGET_USD, metavar="USD")
    p.add_argument("--require", default="", help="features, e.g. ecc,nvlink,mig")
    p.add_argument("--owned", action="store_true", help="also consider buying the GPUs")
    p.add_argument("--no-cloud", action="store_true", help="owned hardware only")
    p.add_argument("--provider", default="", help="only these cloud providers, e.g. aws,lambda")
    p.add_argument("--objective", choices=("cheapest", "fastest", "balanced"))
    p.add_argument("--preset", choices=("individual", "sme", "large-model", "production"))
    p.add_argument(
        "--counts", type=GPU_COUNT_CHOICES, default="1,2,4,8", help="GPU counts to consider"
    )
    p.add_argument("--top", type=TOP, default=5, help="how many to rank")
    p.add_argument(
        "--db", help="results database, whose GPU runs calibrate the predictions (default: "
        "GPUSCOUT_DB or the user data dir)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_advise)

    m = sub.add_parser("memory", help="does training fit in GPU memory (Keras workload or LLM)")
    m.add_argument("--gpu", action="append", default=[], help="GPUs to check (default: all)")
    m.add_argument("--workload", help="a built-in workload (memory from the compiled step)")
    m.add_argument("--precision", choices=PRECISIONS, default="mixed_float16")
    m.add_argument("-b", "--batch-size", type=BATCH)
    m.add_argument("--params", type=PARAMS, help="LLM parameters, e.g. 7e9")
    m.add_argument("--layers", type=LAYERS)
    m.add_argument("--hidden", type=HIDDEN)
    m.add_argument("--heads", type=HEADS)
    m.add_argument("--seq-len", type=SEQ_LEN,
                   help="sequence length (an LLM: default 2048; a workload: its own)")  # fmt: skip
    m.add_argument("--micro-batch", type=BATCH, default=1)
    m.add_argument("--mode", choices=("full", "lora", "qlora"), default="full")
    m.add_argument("--lora-rank", type=LORA_RANK, default=16)
    m.add_argument("--checkpointing", action="store_true", help="activation checkpointing")
    m.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(m)
    m.set_defaults(handler=run_memory)


def run_advise(args: argparse.Namespace) -> int:
    if args.quick:
        return _quick(args)
    if not args.workload:
        raise UserError(
            "say what to advise on: --quick for the checklist, or --workload W --epochs E.",
            "e.g. gpuscout advise --workload resnet50 --epochs 90 --deadline 48h --budget 2000.",
        )
    return _full(args)


def _quick(args: argparse.Namespace) -> int:
    from gpuscout.advise import QUESTIONS, quick
    from gpuscout.advise.checklist import parse_answers

    if args.answers:
        answers = parse_answers(args.answers)
    elif sys.stdin.isatty():
        answers = [input(f"{q} [y/n] ").strip().lower().startswith("y") for q in QUESTIONS]
    else:
        raise UserError("no answers given and no terminal to ask on.", "pass --answers y,n,y,n.")
    result = quick(answers)
    if args.json:
        print_json(result.to_json_dict())
        return 0
    for question, yes in zip(QUESTIONS, answers, strict=True):
        print(f"  {'yes' if yes else 'no ':3s}  {question}")
    print(f"{result.yes_count} x yes -> {result.recommendation}   (rule: {result.rule})")
    print("what the rule does not ask:")
    for line in result.missed:
        print(f"  - {line}")
    return 0


def _full(args: argparse.Namespace) -> int:
    from gpuscout.advise import PRESETS, Request, advise
    from gpuscout.catalog import FEATURES, load_catalog
    from gpuscout.predict.profile_trace import get_profile
    from gpuscout.predict.session import session
    from gpuscout.price import Assumptions
    from gpuscout.workloads import get_workload

    catalog = load_catalog(args.catalog)
    workload = get_workload(args.workload, own_model=False)
    if (args.epochs is None) == (args.samples is None):
        raise UserError("the job needs --epochs or --samples (one of them).", None)
    preset = PRESETS.get(args.preset or "", {})
    require = {f for f in args.require.split(",") if f} | set(preset.get("require", set()))
    for feature in require:
        if feature not in FEATURES:
            raise UserError(f"unknown feature '{feature}'.", f"use: {', '.join(FEATURES)}.")
    providers = frozenset(p for p in args.provider.lower().split(",") if p) or None
    known = {p.provider for p in catalog.prices}
    for p in providers or ():
        if p not in known:
            raise UserError(f"unknown provider '{p}'.", f"use: {', '.join(sorted(known))}.")
    try:
        counts = tuple(int(c) for c in args.counts.split(","))
    except ValueError:
        raise UserError(f"--counts '{args.counts}' is not a list of numbers.", None) from None
    if any(c < 1 for c in counts):
        raise UserError("GPU counts must be >= 1.", "e.g. --counts 1,2,4,8.")
    batch = args.batch_size or workload.default_batch_gpu
    profile = get_profile(workload.name, workload.resolve({}), batch, args.precision)
    samples = args.samples or args.epochs * workload.epoch_samples
    request = Request(
        profile=profile,
        samples=samples,
        unit=workload.epoch_unit,
        deadline_hours=args.deadline,
        budget_usd=args.budget,
        require=frozenset(require),
        owned=args.owned or bool(preset.get("owned")),
        cloud=not args.no_cloud,
        providers=providers,
        counts=counts,
        objective=args.objective or preset.get("objective", "balanced"),
    )
    # the predictions every command makes: your stored GPU runs in the calibration
    result = advise(request, session(catalog, args.db), Assumptions())
    result.ranked = result.ranked[: args.top]
    if args.preset:
        result.assumptions.insert(0, f"preset '{args.preset}': {preset}")
    if args.json:
        print_json(result.to_json_dict(), default=sorted)
        return 0
    from gpuscout.report.advise_table import print_advice
    from gpuscout.report.console import stdout_console

    print_advice(result, stdout_console())
    return 0


def run_memory(args: argparse.Namespace) -> int:
    from gpuscout.advise import Transformer, memory_fit, transformer_bytes
    from gpuscout.catalog import load_catalog

    catalog = load_catalog(args.catalog)
    gpus = [catalog.resolve(g).gpu for g in args.gpu] or list(catalog.gpus.values())
    if args.workload:
        from gpuscout.limits import check_fits_a_gpu
        from gpuscout.predict.profile_trace import get_profile
        from gpuscout.workloads import get_workload

        w = get_workload(args.workload, own_model=False)
        batch = args.batch_size or w.default_batch_gpu
        dims = w.resolve({"seq_len": args.seq_len} if args.seq_len else {})
        check_fits_a_gpu(w.name, dims, batch, args.precision, "train", catalog)
        profile = get_profile(w.name, dims, batch, args.precision)
        breakdown = {
            "weights": float(profile.param_bytes),
            "gradients": float(profile.param_bytes),
            "optimizer state": float(profile.optimizer_state_bytes),
            "activations": profile.saved_activation_bytes,
        }
        what = f"{w.name}, batch {profile.batch}, {profile.precision} (from the compiled step)"
    else:
        missing = [n for n in ("params", "layers", "hidden", "heads") if not getattr(args, n)]
        if missing:
            raise UserError(
                f"an LLM needs --{', --'.join(missing)} (or give --workload).",
                "e.g. --params 7e9 --layers 32 --hidden 4096 --heads 32.",
            )
        seq_len = args.seq_len or 2048
        model = Transformer(
            args.params, args.layers, args.hidden, args.heads, seq_len, args.micro_batch,
            args.mode, args.lora_rank, args.checkpointing,
        )  # fmt: skip
        breakdown = transformer_bytes(model)
        what = (
            f"{args.params / 1e9:g}B-parameter transformer, {args.mode}, sequence "
            f"{seq_len}, micro-batch {args.micro_batch}"
            + (", activation checkpointing" if args.checkpointing else "")
        )
    results = [(g, memory_fit(breakdown, g.memory_gb)) for g in gpus]
    if args.json:
        out = {
            "model": what,
            "breakdown_gb": {k: round(v / 1e9, 3) for k, v in breakdown.items()},
            "gpus": [
                {"gpu": g.id, "memory_gb": g.memory_gb, "verdict": r.verdict,
                 "gpus_needed": r.gpus_needed, "notes": r.notes}
                for g, r in results
            ],
        }  # fmt: skip
        print_json(out)
        return 0
    total = sum(breakdown.values()) / 1e9
    print(f"{what}: {total:,.1f} GB")
    for key, value in breakdown.items():
        print(f"  {key:40s} {value / 1e9:10,.2f} GB")
    for g, r in results:
        note = f"  ({'; '.join(r.notes)})" if r.notes else ""
        print(f"  {g.id:16s} {g.memory_gb:5g} GB  {r.verdict}{note}")
    return 0
