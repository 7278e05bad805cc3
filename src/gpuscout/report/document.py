"""What a report says, assembled once from stored runs and the catalog; renderers only lay it out.

The HTML and the Markdown report show the same tables because both render this one record.
It opens with the answer: one line (:mod:`gpuscout.advise.headline`) naming the option
recommended for the job, its time and cost and why; then the job and how it was chosen, the
articles' checklist in one sentence, the ranked options, and the rankings
(:mod:`gpuscout.report.ranking`; the articles: :mod:`gpuscout.core.articles`).

The job is given, never picked here: ``gpuscout.assemble`` resolves the one the user named
(or the one assumed, said with how to change it) and traces user models, which needs
TensorFlow; a report only reads the result.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuscout.advise.batch import job_batch
from gpuscout.advise.checklist import (
    QUESTIONS,
    QuickAnswer,
    agrees,
    quick,
    rule_sentence,
    versus_advice,
)
from gpuscout.advise.headline import headline, no_option
from gpuscout.advise.recommend import Advice, Request, advise
from gpuscout.catalog import Catalog
from gpuscout.core import articles
from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult, impossible_value
from gpuscout.core.units import fmt_hours
from gpuscout.predict.job import Job
from gpuscout.predict.profile import Profile
from gpuscout.predict.session import Session, session
from gpuscout.price import Assumptions
from gpuscout.report.chart_data import Curve, Timeline, measured_curves, predicted_curves, timeline
from gpuscout.report.ranking import REFERENCE, Ranking, RankRow, Traced, rank
from gpuscout.report.summary import Summary

__all__ = ["RankRow", "Ranking", "Report", "Traced", "build_report"]


@dataclass
class Report:
    title: str
    generated_at: str
    runs: list[RunResult]
    rankings: list[Ranking]
    # The answer in one line (advise.headline), or why there is none; the report opens with it.
    headline: str = ""
    job: str = ""  # the job in words ("50 epochs x 1,200,000 samples of your model cnn.py")
    job_note: str = ""  # how the job was chosen: assumed (and how to change it), or given
    advice: Advice | None = None
    quick: QuickAnswer | None = None
    quick_basis: list[str] = field(default_factory=list)
    quick_sentence: str = ""  # the checklist and its answer in one sentence
    quick_vs_advice: str = ""  # why the checklist and advice #1 differ (or that they agree)
    quick_agrees: bool = False  # the first recommended option is of the checklist's kind
    # Who "the articles" are: one citation per article (gpuscout.core.articles).
    sources: list[str] = field(default_factory=articles.sources)
    curves: list[Curve] = field(default_factory=list)
    timelines: list[Timeline] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    # Beyond a few hundred runs: the rest, counted and aggregated (``runs`` is the newest).
    summary: Summary | None = None

    @property
    def inference_runs(self) -> list[RunResult]:
        """Runs of ``bench --mode inference``: their latency tables, apart from the ranking."""
        return [r for r in self.runs if r.inference is not None]


def _quick(
    profile: Profile, hours_reference: float, answers: list[bool] | None
) -> tuple[QuickAnswer, list[str]]:
    """The checklist, answered from the job where it can be and assumed 'no' elsewhere."""
    if answers is not None:
        return quick(answers), ["answers as given (--answers)"]
    derived = [
        profile.params > articles.CHECKLIST_PARAMS,
        hours_reference > articles.CHECKLIST_RUN_HOURS,
        False,
        False,
    ]
    basis = [
        f"{QUESTIONS[0]} {'yes' if derived[0] else 'no'}: {profile.params:,} parameters",
        f"{QUESTIONS[1]} {'yes' if derived[1] else 'no'}: {fmt_hours(hours_reference)} on one "
        f"{REFERENCE} (predicted)",
        f"{QUESTIONS[2]} assumed no (say otherwise with --answers)",
        f"{QUESTIONS[3]} assumed no (say otherwise with --answers)",
    ]
    return quick(derived), basis


def build_report(
    runs: list[RunResult],
    catalog: Catalog,
    *,
    title: str = "gpuscout report",
    job: Job | None = None,
    job_note: str = "",
    answers: list[bool] | None = None,
    assumptions: Assumptions | None = None,
    constraints: Mapping[str, Any] | None = None,
    traced: Mapping[str, Traced] | None = None,
    summary: Summary | None = None,
    model: Session | None = None,
) -> Report:
    """The report on ``runs``: rankings per workload, ``job`` priced and advised (none: the
    report says ``job_note``, why there is no job), scaling curves and monitor timelines.

    ``constraints``: the advice's deadline, budget, owned, ... (``advise.Request``'s fields).
    ``traced``: per workload or model spec among the runs, the profile its GPU rows are
    predicted from, or why there is none (``gpuscout.assemble.trace_models``); built-in
    workloads not in it use their shipped profile. ``summary``: a large store's runs beyond
    ``runs`` (then its newest), counted and aggregated instead of shown one by one.
    ``model``: the prediction session (``gpuscout.predict.session``) every prediction of the
    report goes through, as ``predict``'s do; without one, it is made from ``runs``."""
    runs, notes = _possible(runs)
    if not runs:
        raise UserError(
            "no runs to report on" + (f" ({'; '.join(notes)})" if notes else "") + ".",
            "measure one first: gpuscout bench, or scout.",
        )
    by_workload: dict[str, list[RunResult]] = {}
    for run in runs:
        if run.mode == "train":
            by_workload.setdefault(run.workload, []).append(run)
    # One fit for every prediction in the report, the one every command uses.
    model = model or session(catalog, runs=runs)
    report = Report(title, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), runs, [])
    report.summary = summary
    if summary is not None:
        notes.append(
            f"{summary.total:,} runs: the newest {summary.detailed} are shown run by run (ranking, "
            f"charts, runs table); all {summary.total:,} are counted in the "
            "aggregate table (pick runs with --runs)"
        )
    for name, members in by_workload.items():
        ranking, _ = rank(name, members, model, notes, (traced or {}).get(name))
        if ranking is not None:
            report.rankings.append(ranking)
    report.curves = measured_curves(runs)
    report.timelines = [t for t in map(timeline, runs) if t is not None]
    # how the job was chosen, and what was assumed about it (a model's batch), said with it
    report.job_note = "; ".join(n for n in (job_note, *(job.assumptions if job else ())) if n)
    if job is not None:
        report.curves += predicted_curves(job.profile, model)
        _price(report, job, model, answers, assumptions or Assumptions(), constraints, notes)
    else:
        report.headline = f"No recommendation: {job_note or 'no job to price'}."
    if report.advice is None:  # the advice states the calibration with its own assumptions
        fit = model.describe(job.profile) if job else model.calibration.describe()
        notes += [*model.notes, fit]
    report.assumptions = notes + (report.advice.assumptions if report.advice else [])
    return report


def _price(
    report: Report,
    job: Job,
    model: Session,
    answers: list[bool] | None,
    assumptions: Assumptions,
    constraints: Mapping[str, Any] | None,
    notes: list[str],
) -> None:
    """The job priced on every option, ranked, and said in one line; with the checklist."""
    ref_row = model.option(job.profile, model.catalog.resolve(REFERENCE).gpu)
    report.job = job.label
    notes += [f"the job: {job.label}", *job.assumptions]  # with the rest, as advise says them
    hours_reference = job.samples / ref_row.samples_per_second / 3600
    if hours_reference < 1 / 60:
        notes.append(
            f"the job takes {fmt_hours(hours_reference)} on one {REFERENCE} (predicted): on any "
            "GPU it costs next to nothing, so the choice hardly matters for it; price a longer "
            "job with --epochs N"
        )
    report.quick, report.quick_basis = _quick(job.profile, hours_reference, answers)
    report.quick_sentence = rule_sentence(report.quick)
    request = Request(
        profile=job.profile, samples=job.samples, unit=job.unit,
        **job_batch(constraints or {}, job),
    )  # fmt: skip
    try:
        report.advice = advise(request, model, assumptions)
    except UserError as exc:  # e.g. fits no GPU: the report says so instead of failing
        notes.append(f"no full recommendation: {exc.problem}")
        report.headline = no_option(job.label, exc.problem)
        return
    report.headline = headline(report.advice, request, job.label)
    report.quick_vs_advice = versus_advice(report.quick, report.advice.ranked, request.objective)
    report.quick_agrees = agrees(report.quick, report.advice.ranked)


def _possible(runs: list[RunResult]) -> tuple[list[RunResult], list[str]]:
    """The runs a report can draw, and a note for each it leaves out: imports are checked for
    values no measurement produces (records.impossible_value), but a store filled by an older
    gpuscout may hold one, and one interval below its median broke every report over it."""
    kept: list[RunResult] = []
    notes: list[str] = []
    for run in runs:
        bad = impossible_value(run)
        if bad is None:
            kept.append(run)
        else:
            field, why = bad
            notes.append(
                f"run {run.id} left out: field '{field}': {why} (no measurement gives that; "
                f"'gpuscout runs delete {run.id}' removes it)"
            )
    return kept, notes
