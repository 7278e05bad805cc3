"""``gpuscout report``: stored runs as a self-contained HTML report and/or Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout import articles
from gpuscout.cli.parser import (
    BATCH,
    BUDGET_USD,
    DEADLINE,
    EPOCHS,
    GPU_COUNT_CHOICES,
    RUN_ID,
    SAMPLES,
    STEPS,
    model_spec,
)
from gpuscout.cli.runs import parse_ids
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.errors import UserError
from gpuscout.run_settings import PRECISIONS

if TYPE_CHECKING:
    from gpuscout.predict.job import JobSpec
    from gpuscout.report.summary import Summary


def _answers(text: str) -> list[bool]:
    from gpuscout.advise.checklist import parse_answers

    try:
        return parse_answers(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def add_job_args(p: argparse.ArgumentParser, default_job: str) -> None:
    """The job a report prices, the advice's constraints (as ``advise`` names them) and the
    checklist's answers; shared with ``scout``. ``default_job``: what is assumed without one."""
    from gpuscout.catalog import FEATURES

    job = p.add_argument_group(
        "the job priced and advised", f"Without --job, --model or --from-run: {default_job}, "
        "said in the report with how to change it.",
    )  # fmt: skip
    which = job.add_mutually_exclusive_group()
    which.add_argument(
        "--job", metavar="WORKLOAD|run:ID",
        help="the job: a built-in workload (e.g. resnet50), a stored run's set-up (run:7), or "
        "your model (FILE.py:FUNCTION, as --model)",
    )  # fmt: skip
    which.add_argument(
        "--model", type=model_spec, metavar="FILE.py:FUNCTION",
        help="your own Keras model: a file and the function that builds (and compiles) it, "
        "or FILE.keras; traced once with TensorFlow, then cached; give its size with "
        "--samples (and --epochs) or --steps",
    )  # fmt: skip
    which.add_argument(
        "--from-run", type=RUN_ID, metavar="ID",
        help="the set-up of a stored run (its workload or model, batch per GPU, precision)",
    )  # fmt: skip
    job.add_argument(
        "--epochs", type=EPOCHS,
        help="epochs to train: of --samples samples each, or of the workload's own epoch "
        "(default: the workload's usual run, e.g. 90 for resnet50; printed as an assumption)",
    )  # fmt: skip
    job.add_argument(
        "--samples", type=SAMPLES,
        help="with --epochs: the dataset's size (samples an epoch; needed for your own "
        "model); alone: the samples of the whole job",
    )  # fmt: skip
    job.add_argument(
        "--steps", type=STEPS,
        help="or the job as optimizer steps, each of one GPU's batch (--batch-size)",
    )  # fmt: skip
    job.add_argument(
        "-b", "--batch-size", type=BATCH,
        help="the job's batch per GPU (default: the workload's; 32 for your model; a run's own)",
    )  # fmt: skip
    job.add_argument(
        "--precision", choices=PRECISIONS, default="mixed_float16",
        help="the job's precision on the GPUs predicted: fp32 (TF32 tensor cores on Ampere "
        "and newer), mixed_float16 or mixed_bfloat16 (default mixed_float16; a stored run's "
        "own with --from-run)",
    )  # fmt: skip
    advice = p.add_argument_group("the advice's constraints (as gpuscout advise takes them)")
    advice.add_argument(
        "--deadline", type=DEADLINE,
        help="the job must end within this time, e.g. 48h, 2d (default: no deadline)",
    )  # fmt: skip
    advice.add_argument(
        "--budget", type=BUDGET_USD, metavar="USD",
        help="money you can pay, in US dollars: a rental's cost for the job, or an owned "
        "option's purchase up front (default: no budget)",
    )  # fmt: skip
    advice.add_argument("--owned", action="store_true", help="also consider buying the GPUs")
    advice.add_argument("--no-cloud", action="store_true", help="owned hardware only")
    advice.add_argument(
        "--require", default="",
        help="features every option must have, comma list: " + ", ".join(FEATURES),
    )  # fmt: skip
    advice.add_argument(
        "--provider", default="", help="only these cloud providers, comma list, e.g. aws,lambda"
    )
    advice.add_argument(
        "--objective", choices=("cheapest", "fastest", "balanced"), default="balanced",
        help="how to rank: cheapest (lowest cost of the job), fastest (shortest time), "
        "balanced (time and cost weighed together; the default)",
    )  # fmt: skip
    advice.add_argument(
        "--counts", type=GPU_COUNT_CHOICES, default="1,2,4,8",
        help="GPU counts to consider, comma list (default 1,2,4,8)",
    )  # fmt: skip
    p.add_argument(
        "--answers", type=_answers,
        help="the checklist's four yes/no answers, e.g. no,yes,no,no (default: from the job, "
        "and 'no' for isolation and SLA, said in the report)",
    )  # fmt: skip


def job_spec(args: argparse.Namespace, backend: str = "tensorflow") -> JobSpec:
    """The job the options name: ``--job`` read as a workload, run:ID or a model spec; a
    stored run read from ``args.db``."""
    import math

    from gpuscout.predict.job import JobSpec

    workload, model, run_id = None, args.model, args.from_run
    if args.job is not None:
        text = args.job.strip()
        if text.lower().startswith("run:"):
            try:
                run_id = RUN_ID(text[4:])
            except argparse.ArgumentTypeError as exc:
                raise UserError(
                    f"--job '{text}': the run id {exc}.", "e.g. --job run:7 (gpuscout runs list)."
                ) from None
        elif text.endswith(".keras") or ".py:" in text:
            model = model_spec(text)
        else:
            from gpuscout.workloads import get_workload

            workload = get_workload(text, own_model=False).name
    run = None
    if run_id is not None:
        from gpuscout.store import Store

        with Store(args.db, readonly=True) as store:
            run = store.get(run_id)
    return JobSpec(
        workload=workload,
        model=model,
        run=run,
        epochs=args.epochs,
        samples=math.ceil(args.samples) if args.samples is not None else None,
        steps=args.steps,
        batch_size=args.batch_size,
        precision=args.precision,
        backend=backend,
    )


def constraints(args: argparse.Namespace, catalog: Any) -> dict[str, Any]:
    """The advice's constraints (``advise.Request``'s fields), checked as ``advise`` checks
    them: a feature or provider that does not exist is one line naming it."""
    from gpuscout.catalog import FEATURES

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
    if args.no_cloud and not args.owned:
        raise UserError("--no-cloud leaves no option to rank.", "add --owned to buy the GPUs.")
    return {
        "deadline_hours": args.deadline,
        "budget_usd": args.budget,
        "require": require,
        "owned": args.owned,
        "cloud": not args.no_cloud,
        "providers": providers or None,
        "counts": tuple(int(c) for c in args.counts.split(",")),
        "objective": args.objective,
    }


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="an HTML report with charts, or Markdown, from stored runs",
        description="Stored runs as one self-contained HTML report (charts inline, nothing "
        "fetched) and/or Markdown. It opens with the answer for a job: the GPU option "
        "recommended, its time and cost and why; then the articles' checklist, the ranked "
        "options and the rankings of every workload measured, each GPU predicted beside them.",
        epilog="e.g. gpuscout report --html team.html --model my_model.py:build "
        "--samples 1200000 --epochs 50 --deadline 48h",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--runs", type=parse_ids, help="these runs, e.g. 3,4,7 (default: all)")
    which.add_argument("--latest", action="store_true", help="the latest run and its sweep")
    p.add_argument("--html", type=Path, metavar="FILE", help="write the HTML report here")
    p.add_argument("--md", type=Path, metavar="FILE", help="write the Markdown report here")
    p.add_argument(
        "--title", default="gpuscout report", help="the report's title (default: gpuscout report)"
    )
    add_job_args(p, f"{articles.BENCHMARK_WORKLOAD}, the articles' benchmark, is assumed")
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    add_catalog_arg(p)
    p.set_defaults(handler=run_report)


def selected_runs(
    db: str | None, ids: list[int] | None, latest: bool
) -> tuple[list[Any], Summary | None]:
    """The runs a report covers: the ids given, the latest run (with the rest of its scaling
    sweep), or every stored run; oldest first. Beyond ``DETAIL_LIMIT`` runs, only the newest
    are loaded whole and the rest are summarised from the store's list columns (the summary),
    so a store of 10,000 runs reports in seconds and bounded memory."""
    from gpuscout.report.summary import DETAIL_LIMIT, Summary, aggregate
    from gpuscout.store import Store

    with Store(db, readonly=True) as store:
        rows = store.list(limit=None)  # list columns only: no JSON, no step times
        if ids:
            stored = {r.id for r in rows}
            for i in ids:
                if i not in stored:
                    store.get(i)  # the usual "no run with id" error
            wanted = set(ids)
            rows = [r for r in rows if r.id in wanted]
            if len(rows) <= DETAIL_LIMIT:
                return [store.get(i) for i in ids], None
        if not rows:
            raise UserError(
                "no stored runs to report on.", "measure first: gpuscout bench, or gpuscout scout."
            )
        if latest:
            return _latest(store, rows), None
        if len(rows) <= DETAIL_LIMIT:
            return [store.get(r.id) for r in reversed(rows)], None
        newest = rows[:DETAIL_LIMIT]  # rows are newest first
        summary = Summary(len(rows), len(newest), aggregate(rows))
        return [store.get(r.id) for r in reversed(newest)], summary


def _latest(store: Any, rows: list[Any]) -> list[Any]:
    """The latest run, with the rest of its scaling sweep if it ended one."""
    last = store.get(rows[0].id)
    scaling = last.distribution.scaling if last.distribution else None
    if scaling is None:
        return [last]
    sweep = [store.get(r.id) for r in reversed(rows[:16])]
    return [
        r for r in sweep
        if r.distribution and r.distribution.scaling
        and r.distribution.scaling.sweep == scaling.sweep
    ]  # fmt: skip


def write(report: Any, html: Path | None, md: Path | None) -> list[Path]:
    """Render and write each requested format; return the paths written."""
    from gpuscout.report.files import write_whole

    written = []
    if html is not None:
        from gpuscout.report.html import render_html

        write_whole(html, render_html(report), "--html")
        written.append(html)
    if md is not None:
        from gpuscout.report.markdown import render_markdown

        write_whole(md, render_markdown(report), "--md")
        written.append(md)
    return written


def run_report(args: argparse.Namespace) -> int:
    if args.html is None and args.md is None:
        raise UserError("say where to write the report.", "pass --html FILE and/or --md FILE.")
    from gpuscout.assemble import JobChoice, choose_job, report_on
    from gpuscout.catalog import load_catalog
    from gpuscout.cli.paths import check_output_files
    from gpuscout.predict.session import session
    from gpuscout.text import printable

    check_output_files([(args.html, "--html"), (args.md, "--md")])  # before reading the runs
    catalog = load_catalog(args.catalog)
    wanted = constraints(args, catalog)
    runs, summary = selected_runs(args.db, args.runs, args.latest)
    chosen = choose_job(JobChoice(job_spec(args)), catalog)
    report = report_on(
        runs, catalog, chosen, title=args.title, answers=args.answers, constraints=wanted,
        summary=summary, model=session(catalog, args.db),  # predicted as every command does
    )  # fmt: skip
    for path in write(report, args.html, args.md):
        print(f"wrote {path}", file=sys.stderr)
    print(printable(report.headline))  # the answer first, as the report opens with it
    return 0
