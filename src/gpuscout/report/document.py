"""What a report says, assembled once from stored runs and the catalog; renderers only lay it out.

The HTML and the Markdown report show the same tables because both render this one record.
Measured and predicted values never share a row: every ranking row says which it is, and a
measured row says the set-up it was measured with, since it is rarely the articles' set-up
(the articles: :mod:`gpuscout.articles`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from gpuscout import articles
from gpuscout.advise.checklist import QUESTIONS, QuickAnswer, quick, versus_advice
from gpuscout.advise.recommend import Advice, Request, advise
from gpuscout.catalog import Catalog, Gpu
from gpuscout.errors import UserError
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.session import Session, session
from gpuscout.price import Assumptions
from gpuscout.records import FIT_PREFIX, RunResult, impossible_value
from gpuscout.report.chart_data import Curve, Timeline, measured_curves, predicted_curves, timeline
from gpuscout.report.summary import Summary
from gpuscout.units import fmt_count, fmt_hours

REFERENCE = articles.REFERENCE_GPU  # relative speeds are against it
PREDICT_PRECISION = articles.BENCHMARK_PRECISION  # the predicted rows' set-up
Kind = Literal["measured", "predicted"]


@dataclass(frozen=True)
class RankRow:
    """One line of the ranking table article 001 drew, measured or predicted."""

    gpu: str
    kind: Kind
    setup: str
    samples_per_second: float
    low: float | None
    high: float | None
    epoch_seconds: float | None
    relative: float | None
    ecc: str
    mig: str
    nvlink: str
    run_id: int | None = None
    # What the run's own warnings say about a measured row, and why a figure is left out:
    # a result is never shown without them (``runs show`` lists the same).
    warnings: tuple[str, ...] = ()
    relative_note: str = ""  # shown instead of ``relative`` when it was not computed


@dataclass(frozen=True)
class Ranking:
    workload: str
    unit: str
    epoch_samples: int  # 0: not known (a ScoutCallback run's epoch is not told)
    reference: str
    rows: list[RankRow]


@dataclass
class Report:
    title: str
    generated_at: str
    runs: list[RunResult]
    rankings: list[Ranking]
    job: str = ""
    advice: Advice | None = None
    quick: QuickAnswer | None = None
    quick_basis: list[str] = field(default_factory=list)
    quick_vs_advice: str = ""  # why the checklist and advice #1 differ (or that they agree)
    # Who "the articles" are: one citation per article (gpuscout.articles).
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


class Features(TypedDict):
    ecc: str
    mig: str
    nvlink: str


def _features(gpu: Gpu | None) -> Features:
    """The production features of a ranking row: ECC, MIG, NVLink."""
    if gpu is None:
        return {"ecc": "-", "mig": "-", "nvlink": "-"}
    return {
        "ecc": "yes" if gpu.ecc else "no" if gpu.ecc is not None else "?",
        "mig": f"{gpu.mig_max_instances}x" if gpu.mig_max_instances else "no",
        "nvlink": f"{gpu.nvlink_gb_per_s_total:g} GB/s" if gpu.nvlink_gb_per_s_total else "no",
    }


def _setup(run: RunResult) -> str:
    text = f"{run.precision}, batch {run.per_replica_batch}"
    if run.replicas > 1:
        text += f" x {run.replicas} replicas"
    return text + (", XLA" if run.xla else "")


def _ranking(
    workload_name: str,
    runs: list[RunResult],
    model: Session,
    notes: list[str],
) -> tuple[Ranking | None, Profile | None]:
    from gpuscout.workloads import WORKLOADS

    workload = WORKLOADS.get(workload_name)
    ok = [
        r
        for r in runs
        if r.status == "ok" and r.samples_per_second is not None and r.mode == "train"
    ]
    steps_only = [
        str(r.id)
        for r in runs
        if r.status == "ok" and r.samples_per_second is None and r.mode == "train"
    ]
    if steps_only:  # ScoutCallback without batch_size: a rate per step is not one per sample
        notes.append(
            f"{workload_name}: run{'s' if len(steps_only) > 1 else ''} {', '.join(steps_only)} "
            "not ranked: no batch size was given, "
            "so it measured steps/s, not samples/s (ScoutCallback(batch_size=...) measures both)"
        )
    catalog = model.catalog
    reference = catalog.resolve(REFERENCE).gpu
    rows: list[RankRow] = []
    profile = None
    ref_sps = None
    epoch = ok[0].epoch_samples if ok and ok[0].epoch_samples else None
    unit = ok[0].epoch_unit if ok else "samples"
    if workload is not None:
        epoch, unit = workload.epoch_samples, workload.epoch_unit
        # shipped or cached only: computing a profile needs TensorFlow, and a report never does
        profile = cached(
            workload.name, workload.resolve({}), workload.default_batch_gpu, PREDICT_PRECISION
        )
    if profile is not None and epoch:
        predicted, common = model.predict(
            profile, list(catalog.gpus.values()), [1], reference=reference, epoch_samples=epoch
        )
        # neighbours closer than the model's out-of-sample error are not ranked, said once
        notes += [f"{workload_name}: {n}" for n in common if n.startswith("not distinguishable")]
        ref_sps = next(p.samples_per_second for p in predicted if p.gpu == reference.id)
        for p in sorted(predicted, key=lambda p: -p.samples_per_second):
            if not p.fits_memory:
                continue
            gpu = catalog.gpus[p.gpu]
            rows.append(
                RankRow(
                    gpu=gpu.name,
                    kind="predicted",
                    setup=f"{profile.precision}, batch {profile.batch}",
                    samples_per_second=p.samples_per_second,
                    low=p.low,
                    high=p.high,
                    epoch_seconds=p.epoch_seconds,
                    relative=p.relative_speed,
                    **_features(gpu),
                )
            )
        notes.append(
            f"{workload_name}: predicted rows are for {profile.precision}, batch "
            f"{profile.batch} per GPU (the set-up of article 001's ranking)"
        )
    elif workload is None and workload_name.startswith(FIT_PREFIX):
        notes.append(
            f"'{workload_name}' is your own model, timed by ScoutCallback in model.fit: the "
            "report predicts no GPUs for it (ScoutCallback(batch_size=...) prints predictions "
            "when training ends)"
        )
    elif workload is None:
        notes.append(
            f"'{workload_name}' is your own model: the report predicts no GPUs for it "
            "(gpuscout predict --model traces it with TensorFlow)"
        )
    for run in ok:
        assert run.samples_per_second is not None
        found = catalog.find_device(str(run.env.get("device_name") or ""))
        sps = run.samples_per_second
        warnings = tuple(run.warnings)
        relative = sps.median / ref_sps if ref_sps else None
        relative_note = ""
        if relative is not None and (sps.ci_low is None or sps.ci_high is None):
            # a ratio from a median whose interval is unknown would look as sure as any other
            relative, relative_note = None, "not computed"
            warnings += (
                f"the ratio to {reference.name} is not computed: this run's interval is "
                "undefined (too few measured steps); measure longer for one",
            )
        rows.append(
            RankRow(
                gpu=f"{run.device} (run {run.id})",
                kind="measured",
                setup=_setup(run),
                samples_per_second=sps.median,
                low=sps.ci_low,
                high=sps.ci_high,
                epoch_seconds=run.epoch_seconds or (epoch / sps.median if epoch else None),
                relative=relative,
                run_id=run.id,
                warnings=warnings,
                relative_note=relative_note,
                **_features(found),
            )
        )
    if not rows:
        return None, profile
    rows.sort(key=lambda r: -r.samples_per_second)
    return Ranking(workload_name, unit, epoch or 0, reference.name, rows), profile


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
    epochs: float | None = None,
    answers: list[bool] | None = None,
    assumptions: Assumptions | None = None,
    main: str | None = None,
    summary: Summary | None = None,
    model: Session | None = None,
) -> Report:
    """The report on ``runs``: rankings per workload, the job priced and advised for the
    main workload (``main``, else the most common among the runs), scaling curves and monitor
    timelines. ``summary``: a large store's runs beyond ``runs`` (then its newest), counted
    and aggregated per workload, device and precision instead of shown one by one.

    ``model``: the prediction session (``gpuscout.predict.session``) every prediction of the
    report goes through, as ``predict``'s do: ``report`` and ``scout`` make it from the whole
    store; without one, it is made from ``runs``."""
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
    if main is None and by_workload:
        main = max(by_workload, key=lambda name: len(by_workload[name]))
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
    main_profile = None
    for name, members in by_workload.items():
        ranking, profile = _ranking(name, members, model, notes)
        if ranking is not None:
            report.rankings.append(ranking)
        if name == main:
            main_profile = profile
    report.curves = measured_curves(runs)
    report.timelines = [t for t in map(timeline, runs) if t is not None]
    if main_profile is not None:
        report.curves += predicted_curves(main_profile, model)
        _price(report, main_profile, model, epochs, answers, assumptions or Assumptions(), notes)
    elif main is not None:
        notes.append(f"no cost or advice: '{main}' has no profile to predict other GPUs from")
    if report.advice is None:  # the advice states the calibration with its own assumptions
        notes += [*model.notes, model.calibration.describe()]
    report.assumptions = notes + (report.advice.assumptions if report.advice else [])
    return report


def _price(
    report: Report,
    profile: Profile,
    model: Session,
    epochs: float | None,
    answers: list[bool] | None,
    assumptions: Assumptions,
    notes: list[str],
) -> None:
    from gpuscout.workloads import WORKLOADS

    workload = WORKLOADS[profile.workload]
    ref_row = model.option(profile, model.catalog.resolve(REFERENCE).gpu)
    if epochs is None:
        epochs = workload.default_epochs
        notes.append(
            f"default job for {workload.name}: {workload.default_epochs_why} (price another "
            "with --epochs N)"
        )
    samples = epochs * workload.epoch_samples
    report.job = (
        f"{epochs:g} epochs of {workload.name} ({fmt_count(samples)} {workload.epoch_unit})"
    )
    hours_reference = samples / ref_row.samples_per_second / 3600
    if hours_reference < 1 / 60:
        notes.append(
            f"the job takes {fmt_hours(hours_reference)} on one {REFERENCE} (predicted): on any "
            "GPU it costs next to nothing, so the choice hardly matters for it; price a longer "
            "job with --epochs N"
        )
    report.quick, report.quick_basis = _quick(profile, hours_reference, answers)
    request = Request(profile=profile, samples=samples, unit=workload.epoch_unit)
    try:
        report.advice = advise(request, model, assumptions)
    except UserError as exc:  # e.g. fits no GPU: the report says so instead of failing
        notes.append(f"no full recommendation: {exc.problem}")
        return
    report.quick_vs_advice = versus_advice(report.quick, report.advice.ranked, request.objective)


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
