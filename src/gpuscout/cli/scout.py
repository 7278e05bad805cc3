"""``gpuscout scout``: the main job, measure -> predict -> price -> advise -> report.html."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.cli.bench import add_note_arg, add_publish_args
from gpuscout.cli.parser import MEASURE_PLAN, SECONDS, add_backend_option
from gpuscout.cli.report import add_job_args
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core.records import BenchConfig
from gpuscout.workloads.llm import LLAMA_NAMES

if TYPE_CHECKING:
    from gpuscout.predict.job import JobSpec

DEFAULT_MEASURE = "resnet50=60,mlp=15"
# A decoder LLM job (--job llm-lora-8b, --workload llama-*): its own Keras code at llama-tiny's
# size shows this machine trains it; ResNet-50 would say nothing about the job
LLM_MEASURE = "llama-tiny=20"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "scout",
        help="the main job: measure here, predict the catalog, price, advise, report",
        description="The whole journey in one command: measure your model (--model) or the "
        "articles' workloads on this machine, predict every catalog GPU for them, price the "
        "job on each option (rented or bought), rank the options under your deadline and "
        "budget, and write report.html. The summary and the report open with the answer: "
        "the option recommended, its time and cost, and why.",
        epilog="e.g. gpuscout scout --model my_model.py:build --samples 1200000 --epochs 50 "
        "--deadline 48h --budget 2000",
    )
    p.add_argument(
        "--measure", type=MEASURE_PLAN, metavar="W=SECONDS,...",
        help=f"built-in workloads to measure here and each one's time budget (default "
        f"{DEFAULT_MEASURE}; {LLM_MEASURE} for a decoder LLM job; with --model, only your "
        "model unless this is given)",
    )  # fmt: skip
    p.add_argument(
        "--seconds", type=SECONDS,
        help="how long to measure your model (--model) here, in seconds (default 60)",
    )  # fmt: skip
    p.add_argument("--html", type=Path, default=Path("report.html"), metavar="FILE",
                   help="the HTML report (default report.html)")  # fmt: skip
    p.add_argument("--md", type=Path, metavar="FILE", help="also a Markdown report")
    add_backend_option(p, "measures")
    add_job_args(p, "the first workload measured is assumed (with --epochs: that many of it)")
    add_note_arg(p)
    add_publish_args(p)
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    add_catalog_arg(p)
    p.set_defaults(handler=run_scout)


def default_measure(spec: JobSpec) -> str | None:
    """What scout measures here unless --measure says: nothing beside your model (it is
    measured itself); for a decoder LLM job, llama-tiny (its own code); else the articles'
    workloads."""
    if spec.model:
        return None
    return LLM_MEASURE if spec.workload in LLAMA_NAMES else DEFAULT_MEASURE


def run_scout(args: argparse.Namespace) -> int:
    from gpuscout.cli.parser import resolved_backend
    from gpuscout.measure.backends import refuse_torch
    from gpuscout.measure.user_spec import is_torch_module_file, parse_model_spec

    # a plain PyTorch --model is measured and predicted on PyTorch; Keras on PyTorch is not
    # scouted yet: refused before anything is read, built or stored
    args.backend = resolved_backend(args.backend, args.model)
    if not (args.model and is_torch_module_file(parse_model_spec(args.model, check=False))):
        refuse_torch("scout", args.backend)
    from rich.console import Console
    from rich.text import Text

    from gpuscout.catalog import load_catalog
    from gpuscout.cli.bench import check_publish, publish
    from gpuscout.cli.job_args import check_job_options, constraints, job_spec
    from gpuscout.cli.paths import check_output_files
    from gpuscout.cli.progress import BenchProgress
    from gpuscout.cli.report import write
    from gpuscout.measure.benchmark import check
    from gpuscout.report.console import stdout_console
    from gpuscout.report.scout_summary import print_summary
    from gpuscout.scout import MODEL_SECONDS, ScoutPlan, parse_measure, scout
    from gpuscout.store import Store

    # contradictions first: before the store is read, a model traced or anything measured
    check_job_options(args, [(args.html, "--html"), (args.md, "--md")])
    catalog = load_catalog(args.catalog)
    spec = job_spec(args, args.backend)
    if args.seconds is not None and spec.model is None:
        from gpuscout.core.errors import UserError

        raise UserError(
            "--seconds is how long to measure your model: it needs --model.",
            "add --model FILE.py:FUNCTION, or time workloads with --measure.",
        )
    measure = args.measure or default_measure(spec)
    plan = ScoutPlan(
        measure=parse_measure(measure) if measure else (), model=spec.model,
        model_seconds=args.seconds or MODEL_SECONDS, model_batch=args.batch_size, job=spec,
        constraints=constraints(args, catalog), answers=args.answers, note=args.note,
        backend=args.backend, stack=args.stack,
    )  # fmt: skip
    # what cannot be measured fails now, not after minutes (a model file is checked here)
    if plan.model:
        check(BenchConfig(model=plan.model, seconds=plan.model_seconds, backend=plan.backend))
    if plan.backend != "tensorflow":
        for workload, seconds in plan.measure:
            check(BenchConfig(workload=workload, seconds=seconds, backend=plan.backend))
    check_publish(args)
    # before the minutes of measuring: a folder or an unwritable place fails now, not after
    check_output_files([(args.html, "--html"), (args.md, "--md")], args.db)
    err = Console(stderr=True)
    live = err.is_terminal and not args.quiet

    def stage(text: str) -> None:
        if not args.quiet:
            err.print(Text(f"gpuscout scout: {text}"))

    store = Store(args.db)  # open (and migrate) before measuring: a bad --db fails fast
    with store, BenchProgress(err, enabled=live) as progress:
        result = scout(
            plan, store, catalog, stage, on_progress=progress.update, on_phase=progress.phase
        )
    for run in result.runs:
        publish(run, args)
    stage(f"writing {', '.join(str(p) for p in (args.html, args.md) if p)}")
    written = write(result.report, args.html, args.md)
    print_summary(result.report, result.runs, stdout_console())
    for path in written:
        print(f"report: {path.resolve()}")
    failed = [r for r in result.runs if r.status != "ok"]
    for r in failed:
        from gpuscout.core.text import printable

        print(f"gpuscout: run {r.id} failed ({r.status}): {printable(r.message)}", file=sys.stderr)
    return 1 if failed else 0
