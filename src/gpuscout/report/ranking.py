"""The ranking tables of a report: per workload (or your model), the runs measured and every
catalog GPU predicted, as article 001 drew its ranking.

Measured and predicted values never share a row: every row says which it is, and a measured
row says the set-up it was measured with, since it is rarely the articles' set-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from gpuscout.catalog import Gpu
from gpuscout.core import articles
from gpuscout.core.records import FIT_PREFIX, RunResult
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.session import Session

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


@dataclass(frozen=True)
class Traced:
    """The step profile a workload's (or your model's) GPU rows are predicted from, or why
    there is none. Made by whoever may trace a model (``gpuscout.assemble``); a report only
    reads it, since tracing needs TensorFlow and a report never does."""

    profile: Profile | None
    why_not: str = ""  # e.g. "its model file 'cnn.py' is gone (moved or deleted)"
    epoch_samples: int | None = None  # your dataset's size, where the job says it
    setup: str = ""  # where the profile's batch and precision come from, said with the rows


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


def _profile(
    name: str, ok: list[RunResult], traced: Traced | None, notes: list[str]
) -> tuple[Profile | None, int | None, str]:
    """The profile to predict ``name``'s GPU rows from, its epoch and unit; a note where
    there is none, saying why."""
    from gpuscout.workloads import WORKLOADS

    workload = WORKLOADS.get(name)
    epoch = ok[0].epoch_samples if ok and ok[0].epoch_samples else None
    unit = ok[0].epoch_unit if ok else "samples"
    if workload is not None:
        epoch, unit = workload.epoch_samples, workload.epoch_unit
    if traced is not None and traced.profile is not None:
        return traced.profile, epoch or traced.epoch_samples, unit
    if workload is not None:
        # shipped or cached only: computing a profile needs TensorFlow, and a report never does
        found = cached(
            workload.name, workload.resolve({}), workload.default_batch_gpu, PREDICT_PRECISION
        )
        return found, epoch, unit
    if name.startswith(FIT_PREFIX):
        notes.append(
            f"'{name}' is your own model, timed by ScoutCallback in model.fit: the report "
            "predicts no GPUs for it (ScoutCallback(batch_size=...) prints predictions when "
            "training ends)"
        )
    elif traced is not None and traced.why_not:
        notes.append(f"'{name}' is your own model: no GPU predictions for it: {traced.why_not}")
    else:
        notes.append(
            f"'{name}' is your own model: the report predicts no GPUs for it (the run records "
            "no model file; gpuscout predict --model FILE.py:FUNCTION traces one)"
        )
    return None, epoch, unit


def _predicted(
    name: str, profile: Profile, epoch: int | None, model: Session, notes: list[str], whose: str
) -> tuple[list[RankRow], float]:
    """Every catalog GPU that fits, predicted for ``profile``, and the reference's speed."""
    catalog = model.catalog
    reference = catalog.resolve(REFERENCE).gpu
    predicted, common = model.predict(
        profile, list(catalog.gpus.values()), [1], reference=reference, epoch_samples=epoch or 1
    )
    # neighbours closer than the model's out-of-sample error are not ranked, said once
    notes += [f"{name}: {n}" for n in common if n.startswith("not distinguishable")]
    # which stored runs anchor this workload's rows, and which of its runs could not (said
    # per workload: a report ranks several)
    notes += [f"{name}: {n}" for n in common if n.startswith(("anchored on", "not an anchor"))]
    ref_sps = next(p.samples_per_second for p in predicted if p.gpu == reference.id)
    rows = [
        RankRow(
            gpu=catalog.gpus[p.gpu].name,
            # a GPU your runs of this step measured shows the measurement, said as such
            kind="measured" if p.method.startswith("measured") else "predicted",
            setup=f"{profile.precision}, batch {profile.batch}"
            + (f" ({p.method})" if p.method.startswith("measured") else ""),
            samples_per_second=p.samples_per_second,
            low=p.low,
            high=p.high,
            epoch_seconds=p.epoch_seconds if epoch else None,  # your dataset's size unknown
            relative=p.relative_speed,
            **_features(catalog.gpus[p.gpu]),
        )
        for p in sorted(predicted, key=lambda p: -p.samples_per_second)
        if p.fits_memory
    ]
    notes.append(
        f"{name}: predicted rows are for {profile.precision}, batch {profile.batch} per GPU "
        f"({whose})"
    )
    return rows, ref_sps


def _measured(run: RunResult, epoch: int | None, ref_sps: float | None, model: Session) -> RankRow:
    """A measured run's row, its ratio to the predicted reference where its interval allows."""
    assert run.samples_per_second is not None
    found = model.catalog.find_device(str(run.env.get("device_name") or ""))
    sps = run.samples_per_second
    warnings = tuple(run.warnings)
    relative = sps.median / ref_sps if ref_sps else None
    relative_note = ""
    if relative is not None and (sps.ci_low is None or sps.ci_high is None):
        # a ratio from a median whose interval is unknown would look as sure as any other
        relative, relative_note = None, "not computed"
        warnings += (
            f"the ratio to {model.catalog.resolve(REFERENCE).gpu.name} is not computed: this "
            "run's interval is undefined (too few measured steps); measure longer for one",
        )
    return RankRow(
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


def rank(
    name: str, runs: list[RunResult], model: Session, notes: list[str], traced: Traced | None
) -> tuple[Ranking | None, Profile | None]:
    """The ranking of one workload (or your model): its measured runs and the catalog's
    predicted GPUs, fastest first; with the profile the predictions came from."""
    trained = [r for r in runs if r.status == "ok" and r.mode == "train"]
    ok = [r for r in trained if r.samples_per_second is not None]
    steps_only = [str(r.id) for r in trained if r.samples_per_second is None]
    if steps_only:  # ScoutCallback without batch_size: a rate per step is not one per sample
        notes.append(
            f"{name}: run{'s' if len(steps_only) > 1 else ''} {', '.join(steps_only)} "
            "not ranked: no batch size was given, "
            "so it measured steps/s, not samples/s (ScoutCallback(batch_size=...) measures both)"
        )
    profile, epoch, unit = _profile(name, ok, traced, notes)
    rows: list[RankRow] = []
    ref_sps = None
    if profile is not None:
        whose = traced.setup if traced and traced.setup else "the set-up of article 001's ranking"
        rows, ref_sps = _predicted(name, profile, epoch, model, notes, whose)
    rows += [_measured(run, epoch, ref_sps, model) for run in ok]
    if not rows:
        return None, profile
    rows.sort(key=lambda r: -r.samples_per_second)
    reference = model.catalog.resolve(REFERENCE).gpu.name
    return Ranking(name, unit, epoch or 0, reference, rows), profile
