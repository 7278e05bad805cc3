"""The options that name a training job and the advice's constraints, shared by ``advise``,
``cost``, ``report`` and ``scout``, so the four read the same words the same way: what trains
(a workload, your model, a stored run), how much of it, and what the advice must respect.
Parsing and checking only: ``gpuscout.predict.job.resolve_job`` gives a job its meaning."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.catalog.models import FEATURES
from gpuscout.cli.parser import (
    BATCH,
    BUDGET_USD,
    DATA_GB,
    DEADLINE,
    EPOCHS,
    GPU_COUNT_CHOICES,
    LORA_RANK,
    RUN_ID,
    SAMPLES,
    SEQ_LEN,
    STEPS,
    DefaultBackend,
    comma_items,
    model_spec,
    resolved_backend,
)
from gpuscout.core.errors import UserError
from gpuscout.core.run_settings import PRECISIONS
from gpuscout.workloads.llm import LORA_RANK as LLM_LORA_RANK

if TYPE_CHECKING:
    from gpuscout.catalog import Catalog
    from gpuscout.predict.job import JobSpec
    from gpuscout.predict.session import Session

# advise.ties.Objective, the default (advise.ties.DEFAULT_OBJECTIVE) first; a test checks
OBJECTIVES = ("cheapest", "fastest", "balanced")
DEFAULT_OBJECTIVE = OBJECTIVES[0]
DEFAULT_COUNTS = "1,2,4,8"
# The job's options as typed (attribute -> option); their defaults are None, so "given" is
# "not None" and an option a command would ignore can be refused instead (issue 31).
JOB_OPTIONS = {
    "workload": "--workload", "model": "--model", "from_run": "--from-run",
    "epochs": "--epochs", "samples": "--samples", "steps": "--steps",
    "batch_size": "--batch-size", "precision": "--precision", "seq_len": "--seq-len",
    "mode": "--mode", "lora_rank": "--lora-rank", "checkpointing": "--checkpointing",
    "tokens": "--tokens",
}  # fmt: skip
ADVICE_OPTIONS = {
    "deadline": "--deadline", "budget": "--budget", "owned": "--owned",
    "no_cloud": "--no-cloud", "require": "--require", "provider": "--provider",
    "objective": "--objective", "counts": "--counts", "gpus": "--gpus", "data_gb": "--data-gb",
    "global_batch": "--global-batch",
}  # fmt: skip


SIZE_OPTIONS = {"epochs": "--epochs", "samples": "--samples"}  # the job's size, not in steps


def given(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    """The options of ``options`` the user typed, by name (a flag set, a value not None or
    empty): what a command that does not use them must refuse rather than drop unsaid."""
    return [flag for name, flag in options.items() if getattr(args, name, None) not in
            (None, False, "", [])]  # fmt: skip


def refuse_with(option: str, others: list[str], why: str, fix: str) -> None:
    """One line naming ``option`` and the first of ``others`` that contradicts it."""
    if others:
        raise UserError(f"{option} and {others[0]} contradict each other: {why}.", fix)


def add_job_source(group: Any, workload_help: str | None) -> None:
    """--workload (where ``workload_help`` is given), --model and --from-run."""
    if workload_help is not None:
        group.add_argument("--workload", help=workload_help)
    group.add_argument(
        "--model", type=model_spec, metavar="FILE.py:FUNCTION",
        help="your own Keras model: a file and the function that builds (and compiles) it, "
        "or FILE.keras; traced once with TensorFlow, then cached; give its size with "
        "--samples (and --epochs) or --steps",
    )  # fmt: skip
    group.add_argument(
        "--from-run", type=RUN_ID, metavar="ID",
        help="a stored GPU run: the job's set-up (its workload or model, batch per GPU, "
        "precision) and the one run every prediction is anchored on (without it, every stored "
        "one-GPU run of the job's step anchors)",
    )  # fmt: skip


STACK_HELP = (
    "the software stack predicted where no stored run of the step anchors it: tf (TensorFlow "
    "without XLA), tf-xla, keras-jax, pytorch or tuned (NGC/DALI-style submissions); default: "
    "the stack gpuscout measures with (tf; keras-jax for --backend jax), said in the output"
)


def add_stack_option(group: Any) -> None:
    """--stack: the software level a prediction assumes (``predict/stacks.py``)."""
    group.add_argument("--stack", metavar="LEVEL", help=STACK_HELP)


def prediction_session(
    args: argparse.Namespace, catalog: Catalog, spec: JobSpec | None = None, store: Any = None
) -> Session:
    """The one prediction session of a command: its ``--stack``, and the job's stored run
    (``--from-run``, ``--job run:ID``) as the one anchor, else every stored run of the step."""
    from gpuscout.predict.session import session

    run = spec.run if spec is not None else None
    return session(
        catalog,
        store if store is not None else args.db,
        stack=getattr(args, "stack", None),
        from_run=run.id if run is not None else None,
        strict=False,  # the run is the job's set-up too: one that cannot anchor is said
        backend=spec.backend if spec is not None else "tensorflow",
    )


def add_job_size(group: Any, epochs_default: str = "") -> None:
    """The job's size (--epochs, --samples, --steps), its batch per GPU and precision."""
    group.add_argument(
        "--epochs", type=EPOCHS,
        help="epochs to train: of --samples samples each, or of the workload's own epoch "
        f"(resnet50: 1,281,167 images){epochs_default}",
    )  # fmt: skip
    group.add_argument(
        "--samples", type=SAMPLES,
        help="with --epochs: the dataset's size (samples an epoch; needed for your own "
        "model); alone: the samples of the whole job",
    )  # fmt: skip
    group.add_argument(
        "--tokens", type=SAMPLES,
        help="or a language model's job as tokens in all (e.g. 1e9): whole sequences of "
        "--seq-len tokens",
    )  # fmt: skip
    group.add_argument(
        "--steps", type=STEPS,
        help="or the job as optimizer steps, each of one GPU's batch (--batch-size)",
    )  # fmt: skip
    group.add_argument(
        "-b", "--batch-size", type=BATCH,
        help="the job's batch per GPU (default: the workload's; 32 for your model; a run's own)",
    )  # fmt: skip
    group.add_argument(
        "--precision", choices=PRECISIONS,
        help="the job's precision on the GPUs predicted: fp32 (TF32 tensor cores on Ampere "
        "and newer), mixed_float16 or mixed_bfloat16 (default mixed_float16, every command's "
        "default for training; a stored run's own with --from-run)",
    )  # fmt: skip
    group.add_argument(
        "--seq-len",
        type=SEQ_LEN,
        help="the job's sequence length (llama-*: default 2048; bert-*, gpt2*)",
    )
    group.add_argument(
        "--mode", choices=("train", "lora"),
        help="train: every weight trained (the default); lora: a decoder LLM's base frozen and "
        "LoRA adapters trained (llama-* workloads)",
    )  # fmt: skip
    group.add_argument(
        "--lora-rank",
        type=LORA_RANK,
        metavar="R",
        help=f"--mode lora: the adapters' rank (default {LLM_LORA_RANK})",
    )
    group.add_argument(
        "--checkpointing", action="store_true",
        help="gradient checkpointing (llama-* workloads): each block recomputed in the "
        "backward pass, far less memory for about a third more work",
    )  # fmt: skip


def add_global_batch(group: Any) -> None:
    """``--global-batch``, the same on every command that prices options (advise, cost,
    report, scout): each option's GPUs split it as ``predict.batch_plan`` says."""
    group.add_argument(
        "--global-batch", type=BATCH, metavar="N",
        help="samples per optimizer step over all GPUs, your training recipe's: each option's "
        "batch per GPU is then the largest that fits its memory up to N / its GPUs (gradient "
        "accumulation where that does not fit), said in its row (default: the job's own "
        "batch: the workload's, 32 for your model, a stored run's over all its replicas); -b "
        "instead fixes the batch per GPU on every option",
    )  # fmt: skip


def fixed_batch(args: argparse.Namespace) -> bool:
    """Whether -b fixes the batch per GPU on every option (else they split one global batch);
    -b beside --global-batch is refused, in the same words by every command that prices."""
    fixed = getattr(args, "batch_size", None) is not None
    if fixed and getattr(args, "global_batch", None) is not None:
        refuse_with(f"-b {args.batch_size}", [f"--global-batch {args.global_batch}"],
                    "-b fixes the batch per GPU on every option (the global batch is it x the "
                    "GPUs), --global-batch the samples of one step over all of them",
                    "give one of them.")  # fmt: skip
    return fixed


def add_advice_options(group: Any, objective_default: str | None = DEFAULT_OBJECTIVE) -> None:
    """What the advice must respect and how it ranks (``advise.Request``'s fields)."""
    group.add_argument(
        "--deadline", type=DEADLINE,
        help="the job must end within this time, e.g. 48h, 2d (default: no deadline)",
    )  # fmt: skip
    group.add_argument(
        "--budget", type=BUDGET_USD, metavar="USD",
        help="money you can pay, in US dollars: a rental's cost for the job, or an owned "
        "option's purchase up front (default: no budget)",
    )  # fmt: skip
    group.add_argument(
        "--data-gb", type=DATA_GB, metavar="GB",
        help="your training data, copied into each rented machine before its first step at "
        "the sourced data_copy_gbit: in every rented option's time and cost (default: not "
        "counted)",
    )  # fmt: skip
    add_global_batch(group)
    group.add_argument("--owned", action="store_true", help="also consider buying the GPUs")
    group.add_argument("--no-cloud", action="store_true", help="owned hardware only")
    group.add_argument(
        "--require", default="",
        help="features every option must have, comma list: " + ", ".join(FEATURES),
    )  # fmt: skip
    group.add_argument(
        "--provider", default="", help="only these cloud providers, comma list, e.g. aws,lambda"
    )
    group.add_argument(
        "--objective", choices=OBJECTIVES, default=objective_default,
        help="how to rank: cheapest (the lowest cost of the job that meets the deadline and "
        "budget; the default), fastest (the shortest time within them), balanced (hours x "
        "dollars, each against the best option's); options that meet the deadline and budget "
        "even at their range's slow end rank first",
    )  # fmt: skip
    group.add_argument(
        "--counts", type=GPU_COUNT_CHOICES,
        help=f"GPU counts to consider, comma list (default {DEFAULT_COUNTS})",
    )  # fmt: skip
    group.add_argument(
        "--gpus", action="append", default=[], metavar="GPU,...",
        help="only these GPUs, the ones you are choosing between: a comma list and/or "
        "repeated, e.g. --gpus rtx-4090,rtx-3090,h100-sxm (default: every catalog GPU)",
    )  # fmt: skip


def constraints(
    args: argparse.Namespace, catalog: Any, preset: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The advice's constraints (``advise.Request``'s fields), a ``--preset``'s merged in,
    checked: a feature or provider that does not exist is one line naming it."""
    preset = preset or {}
    require = frozenset(f.strip() for f in args.require.lower().split(",") if f.strip())
    for feature in sorted(require):
        if feature not in FEATURES:
            raise UserError(f"unknown feature '{feature}' in --require.",
                            f"use: {', '.join(FEATURES)}.")  # fmt: skip
    providers = frozenset(p.strip() for p in args.provider.lower().split(",") if p.strip())
    known = {p.provider for p in catalog.prices}
    for provider in sorted(providers):
        if provider not in known:
            raise UserError(f"unknown provider '{provider}' in --provider.",
                            f"use: {', '.join(sorted(known))}.")  # fmt: skip
    owned = args.owned or bool(preset.get("owned"))
    if args.no_cloud and providers:
        raise UserError(
            f"--no-cloud leaves out every cloud provider, so --provider {args.provider} "
            "would choose among none.",
            "drop one of --no-cloud and --provider.",
        )
    if args.no_cloud and not owned:
        raise UserError("--no-cloud leaves no option to rank.", "add --owned to buy the GPUs.")
    fixed = fixed_batch(args)
    named = comma_items(getattr(args, "gpus", []), "--gpus", "rtx-4090,h100-sxm")
    gpus = frozenset(catalog.resolve(n).gpu.id for n in named) or None
    return {
        "gpus": gpus,
        "data_gb": args.data_gb or 0.0,
        "global_batch": args.global_batch,
        "fixed_batch": fixed,
        "batch_source": "yours, --global-batch" if args.global_batch is not None else "",
        "deadline_hours": args.deadline,
        "budget_usd": args.budget,
        "require": require | frozenset(preset.get("require", ())),
        "owned": owned,
        "cloud": not args.no_cloud,
        "providers": providers or None,
        "counts": tuple(int(c) for c in (args.counts or DEFAULT_COUNTS).split(",")),
        "counts_given": args.counts is not None,
        "objective": args.objective or preset.get("objective", DEFAULT_OBJECTIVE),
    }


def check_job_options(args: argparse.Namespace, outputs: list[tuple[Path | None, str]]) -> None:
    """Options of ``report`` and ``scout`` that contradict each other, refused in one line
    naming both before a store is read, a model traced or anything measured (issue 31).

    ``--steps`` with ``--epochs``/``--samples`` sizes one job two ways; a report file
    (``outputs``) that is the model file or a catalog file the command reads would replace
    the user's own input with the report, after minutes of measuring."""
    if args.steps is not None:
        refuse_with("--steps", given(args, SIZE_OPTIONS), "--steps is the whole job by itself "
                    "(steps x the batch per GPU), so the two sizes would disagree",
                    "give --steps S alone, or --epochs E and/or --samples N.")  # fmt: skip
    from gpuscout.cli.paths import same_file

    inputs = [(Path(c), "--catalog", "catalog file") for c in getattr(args, "catalog", [])]
    for flag, spec in (("--model", args.model), ("--job", getattr(args, "job", None))):
        if spec and (spec.endswith(".keras") or ".py:" in spec):
            from gpuscout.assemble import model_file

            inputs.append((model_file(spec), flag, "model file"))
    for path, flag in outputs:
        for source, source_flag, what in inputs:
            if path is not None and same_file(path.expanduser(), source.expanduser()):
                refuse_with(f"{flag} {path}", [source_flag], f"the report would overwrite "
                            f"the {what} it reads", f"pass another file to {flag}.")  # fmt: skip


def job_spec(args: argparse.Namespace, backend: str = DefaultBackend("tensorflow")) -> JobSpec:
    """The job the options name (``--job``, where a command has it, read as a workload,
    run:ID or a model spec); a stored run read from ``args.db``. A plain PyTorch model runs
    on PyTorch (``user_spec.backend_for_model``), whatever the default backend."""
    from gpuscout.predict.job import JobSpec
    from gpuscout.workloads.llm import JOBS, checkpointing_dims, mode_dims

    workload, model = getattr(args, "workload", None), args.model
    run_id = args.from_run
    text = (getattr(args, "job", None) or "").strip()
    dims: dict[str, int] = {}
    precision = args.precision
    if text in JOBS:  # a named fine-tuning job: its workload, settings and precision
        workload, dims, job_precision, _ = JOBS[text]
        dims, precision, text = dict(dims), precision or job_precision, ""
    if text.lower().startswith("run:"):
        try:
            run_id = RUN_ID(text[4:])
        except argparse.ArgumentTypeError as exc:
            raise UserError(
                f"--job '{text}': the run id {exc}.", "e.g. --job run:7 (gpuscout runs list)."
            ) from None
    elif text.endswith(".keras") or ".py:" in text:
        model = model_spec(text)
    elif text:
        from gpuscout.workloads import get_workload

        workload = get_workload(text, own_model=False).name
    if getattr(args, "mode", None) == "train":  # typed: every weight, whatever --job named
        dims.pop("lora_rank", None)
    mode = getattr(args, "mode", None) or ("lora" if dims.get("lora_rank") else "train")
    source = "--model" if model else ("--from-run" if run_id is not None else "the assumed job")
    dims.update(mode_dims(workload or "", model, mode, getattr(args, "lora_rank", None)))
    dims.update(checkpointing_dims(workload, bool(getattr(args, "checkpointing", False)),
                                   source))  # fmt: skip
    if getattr(args, "seq_len", None):
        dims["seq_len"] = args.seq_len
    if model:
        backend = resolved_backend(backend, model)
    run = None
    if run_id is not None:
        from gpuscout.store import Store

        with Store(args.db, readonly=True) as store:
            run = store.get(run_id)
        if run is not None and run.config.model and not model:
            # a stored run's plain PyTorch model is traced on PyTorch, whatever the default
            backend = resolved_backend(DefaultBackend(backend), run.config.model)
    return JobSpec(
        workload=workload,
        model=model,
        run=run,
        epochs=args.epochs,
        samples=math.ceil(args.samples) if args.samples is not None else None,
        steps=args.steps,
        batch_size=args.batch_size,
        global_batch=getattr(args, "global_batch", None),
        tokens=math.ceil(args.tokens) if getattr(args, "tokens", None) is not None else None,
        precision=precision,  # None: a stored run's own, else mixed_float16
        backend=backend,
        dims=dims,
    )
