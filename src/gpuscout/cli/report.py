"""``gpuscout report``: stored runs as a self-contained HTML report and/or Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.cli.job_args import (
    add_advice_options,
    add_job_size,
    add_job_source,
    add_stack_option,
    check_job_options,
    constraints,
    job_spec,
    prediction_session,
)
from gpuscout.cli.runs import parse_ids
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core import articles
from gpuscout.core.errors import UserError

if TYPE_CHECKING:
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
    job = p.add_argument_group(
        "the job priced and advised", f"Without --job, --model or --from-run: {default_job}, "
        "said in the report with how to change it.",
    )  # fmt: skip
    which = job.add_mutually_exclusive_group()
    which.add_argument(
        "--job", metavar="WORKLOAD|run:ID",
        help="the job: a built-in workload (e.g. resnet50), a named fine-tuning job "
        "(llm-lora-8b: Llama-3.1-8B, LoRA r64, checkpointed, bfloat16, 3 epochs of Alpaca; "
        "llm-full-8b: every weight), a stored run's set-up (run:7), or your model "
        "(FILE.py:FUNCTION, as --model)",
    )  # fmt: skip
    add_job_source(which, None)
    add_stack_option(job)
    add_job_size(job, "; default: the workload's usual run, e.g. 90 for resnet50, printed as an "
                 "assumption")  # fmt: skip
    add_advice_options(p.add_argument_group("the advice's constraints (as gpuscout advise "
                                            "takes them)"))  # fmt: skip
    p.add_argument(
        "--answers", type=_answers,
        help="the checklist's four yes/no answers, e.g. no,yes,no,no (default: from the job, "
        "and 'no' for isolation and SLA, said in the report)",
    )  # fmt: skip


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
                return store.load(ids), None
        if not rows:
            raise UserError(
                "no stored runs to report on.", "measure first: gpuscout bench, or gpuscout scout."
            )
        if latest:
            return _latest(store, rows), None
        if len(rows) <= DETAIL_LIMIT:
            return store.load([r.id for r in reversed(rows)]), None
        newest = rows[:DETAIL_LIMIT]  # rows are newest first
        summary = Summary(len(rows), len(newest), aggregate(rows))
        return store.load([r.id for r in reversed(newest)]), summary


def _latest(store: Any, rows: list[Any]) -> list[Any]:
    """The latest run, with the rest of its scaling sweep if it ended one."""
    last = store.get(rows[0].id)
    scaling = last.distribution.scaling if last.distribution else None
    if scaling is None:
        return [last]
    sweep = store.load([r.id for r in reversed(rows[:16])])
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
    from gpuscout.core.text import printable

    # before reading the runs; never the results database itself, nor a file the report reads
    check_job_options(args, [(args.html, "--html"), (args.md, "--md")])
    check_output_files([(args.html, "--html"), (args.md, "--md")], args.db)
    catalog = load_catalog(args.catalog)
    wanted = constraints(args, catalog)
    runs, summary = selected_runs(args.db, args.runs, args.latest)
    spec = job_spec(args)
    chosen = choose_job(JobChoice(spec), catalog)
    report = report_on(
        runs, catalog, chosen, title=args.title, answers=args.answers, constraints=wanted,
        summary=summary, model=prediction_session(args, catalog, spec),  # as every command
    )  # fmt: skip
    for path in write(report, args.html, args.md):
        print(f"wrote {path}", file=sys.stderr)
    print(printable(report.headline))  # the answer first, as the report opens with it
    return 0
