"""``gpuscout advise`` (quick checklist or full recommendation) and ``gpuscout memory``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from gpuscout.cli.job_args import add_advice_options, add_job_size, add_job_source, add_stack_option
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    HEADS,
    HIDDEN,
    LAYERS,
    LORA_RANK,
    PARAMS,
    SEQ_LEN,
    TOP,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core.errors import UserError
from gpuscout.core.run_settings import PRECISIONS
from gpuscout.workloads import WORKLOADS

if TYPE_CHECKING:
    from gpuscout.advise.memory import Mode

# advise.recommend.PRESETS in words (importing it here would slow every command's start; a
# test checks the two agree)
PRESET_WORDS = {
    "individual": "cheapest, owned GPUs considered",
    "sme": "cheapest, cloud only",
    "large-model": "fastest, cloud only, with nvlink and ecc",
    "production": "cheapest, cloud only, with ecc",
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "advise",
        help="which GPU: the articles' checklist, or a full recommendation",
        description="Which GPU to train a job on. --quick: the four yes/no questions of the "
        "articles this tool started from (gpuscout.core.articles). Otherwise a recommendation: "
        "every catalog GPU and GPU count predicted for the job (a built-in workload or your "
        "own model), priced for rent or purchase, filtered by deadline and budget, ranked.",
        epilog="e.g. gpuscout advise --model my_model.py:build --samples 1200000 --epochs 50 "
        "--deadline 48h --budget 2000",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the four-question checklist of articles 000 and 002 (gpuscout.core.articles)",
    )
    p.add_argument(
        "--answers",
        help="the checklist's four yes/no answers in order, e.g. yes,no,yes,no (else asked)",
    )
    job = p.add_argument_group("the job (one of --workload, --model, --from-run; and its size)")
    add_job_source(job, "a built-in workload: " + ", ".join(WORKLOADS))
    add_stack_option(job)
    add_job_size(job)
    add_advice_options(p.add_argument_group("what the advice must respect"), None)
    p.add_argument(
        "--preset", choices=tuple(PRESET_WORDS),
        help="a ready set of --objective, --owned and --require for a kind of team (article "
        "001's): " + "; ".join(f"{k}: {v}" for k, v in PRESET_WORDS.items()),
    )  # fmt: skip
    p.add_argument("--top", type=TOP, default=5, help="how many options to rank (default 5)")
    p.add_argument(
        "--db", help="results database, whose GPU runs calibrate the predictions (default: "
        "GPUSCOUT_DB or the user data dir)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_advise)

    from gpuscout.cli.parser import gpu_names, precision_help  # memory's own (cheap) imports

    m = sub.add_parser(
        "memory",
        help="does training fit in GPU memory (a workload, your model or an LLM)",
        description="Does training fit in one GPU's memory, and if not, on how many GPUs with "
        "the model states sharded (ZeRO-3/FSDP)? Either a built-in workload or your --model, its "
        "memory counted from the traced step (weights, gradients, optimizer state, activations), "
        "or a transformer LLM described by --params, --layers, --hidden and --heads, trained "
        "in full, with LoRA or with QLoRA (standard estimates, printed by component). Every "
        "catalog GPU is checked unless --gpu names some.",
        epilog="e.g. gpuscout memory --params 7e9 --layers 32 --hidden 4096 --heads 32 "
        "--mode lora --gpu rtx-4090,a100-80gb-sxm",
    )
    m.add_argument(
        "--gpu", type=gpu_names, action="append", default=[],
        help="GPUs to check, a comma list and/or repeated, e.g. --gpu rtx-4090,h100-sxm "
        "(default: all, every catalog GPU)",
    )  # fmt: skip
    m.add_argument(
        "--workload",
        help=f"a built-in workload ({', '.join(WORKLOADS)}): memory from its compiled step; "
        "without it, describe an LLM with --params, --layers, --hidden and --heads",
    )
    m.add_argument(
        "--model",
        help="your own model instead, FILE.py:FUNCTION returning a keras.Model or a plain "
        "torch.nn.Module (docs/torch.md), or a .keras file: memory from its traced step",
    )
    m.add_argument(
        "--precision", choices=PRECISIONS,
        help=precision_help("mixed_float16", "; with --workload only: an LLM is counted with "
                            "16-bit weights and gradients and fp32 Adam state"),
    )  # fmt: skip
    m.add_argument(
        "-b", "--batch-size", type=BATCH,
        help="with --workload: samples per GPU (default: the workload's); an LLM takes "
        "--micro-batch",
    )  # fmt: skip
    m.add_argument("--params", type=PARAMS,
                   help="LLM parameters, e.g. 7e9 (with --layers, --hidden, --heads)")  # fmt: skip
    m.add_argument("--layers", type=LAYERS,
                   help="LLM transformer layers (blocks), e.g. 32 for a 7B model")  # fmt: skip
    m.add_argument("--hidden", type=HIDDEN,
                   help="LLM hidden size (d_model), e.g. 4096 for a 7B model")  # fmt: skip
    m.add_argument("--heads", type=HEADS,
                   help="LLM attention heads, e.g. 32; they size the attention scores kept "
                   "for the backward pass")  # fmt: skip
    m.add_argument("--seq-len", type=SEQ_LEN,
                   help="sequence length in tokens (an LLM: default 2048; a workload: its "
                   "own)")  # fmt: skip
    m.add_argument("--micro-batch", type=BATCH,
                   help="LLM sequences per GPU per step (default 1); activations grow with "
                   "it")  # fmt: skip
    m.add_argument(
        "--mode", choices=("full", "lora", "qlora"),
        help="how an LLM is trained: full (every weight: 16 bytes a parameter for 16-bit "
        "weights and gradients, fp32 master weights and Adam's two moments; the default), lora "
        "(16-bit frozen weights, low-rank adapters trained), qlora (4-bit frozen weights, "
        "adapters trained)",
    )  # fmt: skip
    m.add_argument(
        "--lora-rank", type=LORA_RANK,
        help="rank of the adapters on the four attention projections, with --mode lora or "
        "qlora (default 16)",
    )  # fmt: skip
    m.add_argument(
        "--checkpointing", action="store_true",
        help="activation checkpointing: keep only each layer's input and recompute the rest "
        "in the backward pass (less memory, more compute)",
    )  # fmt: skip
    m.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(m)
    m.set_defaults(handler=run_memory)


def run_advise(args: argparse.Namespace) -> int:
    from gpuscout.cli.job_args import ADVICE_OPTIONS, JOB_OPTIONS, given, refuse_with

    if args.quick:
        ignored = given(args, {**JOB_OPTIONS, **ADVICE_OPTIONS, "preset": "--preset"})
        refuse_with("--quick", ignored, "the checklist asks four questions and reads no job "
                    "or constraint", "drop --quick for a recommendation on the job, or drop "
                    f"{ignored[0] if ignored else ''} for the checklist.")  # fmt: skip
        return _quick(args)
    if args.answers:
        raise UserError(
            f"--answers {args.answers} answers the --quick checklist, which was not asked for.",
            "add --quick for the checklist, or drop --answers for a recommendation.",
        )
    if not (args.workload or args.model or args.from_run):
        raise UserError(
            "say what to advise on: --quick for the checklist, or a job: --workload W, "
            "--model FILE.py:FUNCTION or --from-run ID, with its size.",
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
    from gpuscout.advise.headline import headline
    from gpuscout.catalog import load_catalog
    from gpuscout.cli.job_args import constraints, job_spec, prediction_session
    from gpuscout.predict.job import resolve_job
    from gpuscout.price import Assumptions

    catalog = load_catalog(args.catalog)
    preset = PRESETS.get(args.preset or "", {})
    wanted = constraints(args, catalog, preset)
    spec = job_spec(args)
    job = resolve_job(spec, catalog)
    from gpuscout.advise.batch import job_batch

    request = Request(
        profile=job.profile, samples=job.samples, unit=job.unit, label=job.label,
        **job_batch(wanted, job),
    )  # fmt: skip
    # the predictions every command makes: anchored on your stored GPU runs of the step
    result = advise(request, prediction_session(args, catalog, spec), Assumptions())
    answer = headline(result, request, job.label)  # against every option, before --top
    result.ranked = result.ranked[: args.top]
    if args.preset:
        result.assumptions.insert(0, f"preset '{args.preset}': {preset}")
    result.assumptions[:0] = list(job.assumptions)
    if args.json:
        print_json({"headline": answer, **result.to_json_dict()}, default=sorted)
        return 0
    from gpuscout.report.advise_table import print_advice
    from gpuscout.report.console import stdout_console

    console = stdout_console()
    console.print(answer, highlight=False, markup=False)
    print_advice(result, console)
    return 0


def run_memory(args: argparse.Namespace) -> int:
    from gpuscout.advise import Transformer, memory_fit
    from gpuscout.advise.llm_memory import llm_memory
    from gpuscout.catalog import load_catalog
    from gpuscout.cli.parser import comma_items

    catalog = load_catalog(args.catalog)
    # '--gpu a,b', '--gpu a --gpu b' or both, as predict --gpus takes them; 'all': the default
    names = comma_items(args.gpu, "--gpu", "rtx-4090,h100-sxm")
    picked = {g.id: g for g in (catalog.resolve(n).gpu for n in names if n != "all")}
    gpus = list(picked.values()) if names and "all" not in names else list(catalog.gpus.values())
    _check_memory_pairs(args)
    if args.model:
        breakdown, what = _model_memory(args)
        notes: list[str] = []
    elif args.workload:
        from gpuscout.core.limits import check_fits_a_gpu
        from gpuscout.predict.predictor import memory_parts
        from gpuscout.predict.profile_trace import get_profile
        from gpuscout.workloads import get_workload, run_shape
        from gpuscout.workloads.llm import checkpointing_dims, mode_dims

        w = get_workload(args.workload, own_model=False)
        batch = args.batch_size or w.default_batch_gpu
        settings = {"seq_len": args.seq_len} if args.seq_len else {}
        trains = {"full": "train"}.get(args.mode or "full", args.mode)
        settings |= mode_dims(w.name, None, trains, args.lora_rank)
        settings |= checkpointing_dims(w.name, args.checkpointing)
        dims = w.resolve(settings)
        precision = args.precision or "mixed_float16"
        check_fits_a_gpu(w.name, dims, batch, precision, "train", catalog)
        profile = get_profile(w.name, dims, batch, precision)
        breakdown = memory_parts(profile)
        shape = run_shape(w.name, dims)[1]
        what = (f"{w.name}{f' ({shape})' if shape else ''}, batch {profile.batch}, "
                f"{profile.precision} (from the compiled step)")  # fmt: skip
        notes = []
    else:
        missing = [n for n in ("params", "layers", "hidden", "heads") if not getattr(args, n)]
        if missing:
            raise UserError(
                f"an LLM needs --{', --'.join(missing)} (or give --workload).",
                "e.g. --params 7e9 --layers 32 --hidden 4096 --heads 32.",
            )
        seq_len, micro_batch = args.seq_len or 2048, args.micro_batch or 1
        mode: Mode = args.mode or "full"  # None: not given, so a workload can refuse it
        model = Transformer(
            args.params, args.layers, args.hidden, args.heads, seq_len, micro_batch,
            mode, args.lora_rank or 16, args.checkpointing,
        )  # fmt: skip
        counted = llm_memory(model)  # its built-in twin's compiled step where at hand
        breakdown, what, notes = counted.breakdown, counted.what, counted.notes
    kind: Mode = args.mode or "full"
    results = [(g, memory_fit(breakdown, g.memory_gb, mode=kind,
                              checkpointing=args.checkpointing)) for g in gpus]  # fmt: skip
    if args.json:
        out = {
            "model": what,
            "notes": notes,
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
    for note in notes:
        print(f"  ({note})")
    for key, value in breakdown.items():
        print(f"  {key:40s} {value / 1e9:10,.2f} GB")
    for g, r in results:
        note = f"  ({'; '.join(r.notes)})" if r.notes else ""
        print(f"  {g.id:16s} {g.memory_gb:5g} GB  {r.verdict}{note}")
    return 0


LLM_OPTIONS = {
    "params": "--params", "layers": "--layers", "hidden": "--hidden", "heads": "--heads",
    "micro_batch": "--micro-batch", "mode": "--mode", "lora_rank": "--lora-rank",
}  # fmt: skip


def _model_memory(args: argparse.Namespace) -> tuple[dict[str, float], str]:
    """Your model's training memory, from its traced step (a plain PyTorch module's captured
    step, found from its file's imports, or a Keras model's on TensorFlow), as predict counts
    it: the same profile, the same cache."""
    from gpuscout.cli.parser import DefaultBackend, resolved_backend
    from gpuscout.predict.job import MODEL_BATCH
    from gpuscout.predict.predictor import memory_parts
    from gpuscout.predict.profile_trace import get_user_profile

    backend = resolved_backend(DefaultBackend("tensorflow"), args.model)
    batch = args.batch_size or MODEL_BATCH
    precision = args.precision or "mixed_float16"
    profile = get_user_profile(args.model, batch, precision, backend)
    said = "" if args.batch_size else ", gpuscout's default for your model (-b)"
    return memory_parts(profile), (
        f"your model {args.model}, batch {profile.batch}{said}, {profile.precision} (from its "
        f"traced step, on {'PyTorch' if backend == 'torch' else backend})"
    )


def _check_memory_pairs(args: argparse.Namespace) -> None:
    """A workload's memory is counted from its compiled step and an LLM's from its shape, so
    an option of the other kind would be dropped unsaid: refused, naming both."""
    from gpuscout.cli.job_args import given, refuse_with

    if args.model:
        refuse_with(f"--model {args.model}", given(args, {**LLM_OPTIONS, "workload":
                    "--workload", "checkpointing": "--checkpointing"}),
                    "your model's memory is counted from its own traced step", "drop them, "
                    "or drop --model.")  # fmt: skip
        return
    if args.workload:
        from gpuscout.workloads.llm import LLAMA_NAMES

        # a decoder workload takes its own mode, rank and checkpointing (traced, not counted)
        shape_only = {k: v for k, v in LLM_OPTIONS.items() if k not in ("mode", "lora_rank")}
        if args.workload in LLAMA_NAMES:
            if args.mode == "qlora":
                raise UserError(
                    f"--workload {args.workload} --mode qlora: the step is traced with a "
                    "16-bit base; a 4-bit base is estimated from its parts by predict's fit "
                    "options.",
                    "use --mode lora (predict shows what QLoRA would need), or count an LLM "
                    "by its shape: --params, --layers, --hidden, --heads.",
                )
            refuse_with(f"--workload {args.workload}", given(args, shape_only),
                        "a decoder workload's shape is its own", "drop them, or drop "
                        "--workload to count an LLM by its shape.")  # fmt: skip
            return
        refuse_with(f"--workload {args.workload}", given(args, {**LLM_OPTIONS,
                    "checkpointing": "--checkpointing"}),
                    "a workload's memory is counted from its own compiled step, not from an "
                    "LLM's shape", "drop --workload to count an LLM, or drop the LLM's "
                    "options.")  # fmt: skip
        return
    if not given(args, LLM_OPTIONS):
        return  # neither: the missing LLM options are named next
    refuse_with("an LLM (--params ...)", given(args, {"batch_size": "--batch-size",
                "precision": "--precision"}), "an LLM is counted with --micro-batch and 16-bit "
                "weights", "use --micro-batch for an LLM, or give --workload.")  # fmt: skip
    if args.lora_rank is not None and (args.mode or "full") == "full":
        raise UserError(
            f"--lora-rank {args.lora_rank} and --mode full contradict each other: full "
            "training has no adapters.",
            "add --mode lora or --mode qlora, or drop --lora-rank.",
        )
