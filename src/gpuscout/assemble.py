"""A report's inputs, assembled: the job it prices and how that job was chosen, and the traced
profiles of the user models among the runs; then :func:`gpuscout.report.document.build_report`.

``scout`` and ``report`` both come here, so both choose a job the same way: the one the user
named (``--job``, ``--model``, ``--from-run``, resolved by ``predict.job.resolve_job`` as
``advise`` and ``cost`` resolve theirs), else an assumed one that the report names with the
options that change it. A report never picks its job from whichever workload has the most
runs: that once priced "20 epochs of mlp" and advised renting 8 GPUs for a 958 ms job.

Tracing a user model needs TensorFlow (seconds, then cached by the file's hash); where a model
cannot be traced (TensorFlow missing, the model file moved or deleted) the report says why
instead of failing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuscout.catalog import Catalog
from gpuscout.core import articles
from gpuscout.core.errors import GpuscoutError, UserError
from gpuscout.core.records import FIT_PREFIX, RunResult
from gpuscout.predict.job import MODEL_BATCH, Job, JobSpec, resolve_job
from gpuscout.predict.session import Session
from gpuscout.price import Assumptions
from gpuscout.report.document import Report, build_report
from gpuscout.report.ranking import PREDICT_PRECISION, Traced
from gpuscout.report.summary import Summary

HOW_TO_NAME = (
    "name yours with --model FILE.py:FUNCTION --samples N --epochs E, --job WORKLOAD, or "
    "--job run:ID for a stored run's set-up"
)


@dataclass(frozen=True)
class JobChoice:
    """What the user said about the job; where they named none, the workload assumed."""

    spec: JobSpec  # spec.given: a job was named; its size (epochs, samples, steps) either way
    assumed: str = articles.BENCHMARK_WORKLOAD
    assumed_why: str = "the articles' benchmark"


@dataclass(frozen=True)
class Chosen:
    """The job to price (None: none can be, ``note`` says why) and how it was chosen."""

    job: Job | None
    note: str = ""  # "assumed: ...; name yours with ...", a default size, or why no job
    spec: JobSpec | None = None  # as resolved (with a default size filled in)


def model_file(spec: str) -> Path:
    """The file of a model spec (FILE.py:FUNCTION or FILE.keras), as typed."""
    return Path(spec if spec.endswith(".keras") else spec.rpartition(":")[0])


def same_model(a: str, b: str) -> bool:
    """Whether two model specs name one model: a path typed two ways is the same file."""

    def norm(spec: str) -> tuple[str, str]:
        function = "" if spec.endswith(".keras") else spec.rpartition(":")[2]
        return os.path.realpath(model_file(spec)), function

    return norm(a) == norm(b)


def _gone(run: RunResult) -> str:
    """Why a run's model cannot be traced because its file is gone, else ''."""
    spec = run.config.model
    if spec and not model_file(spec).is_file():
        return (
            f"its model file '{model_file(spec)}' is gone (moved or deleted since run {run.id} "
            "measured it); restore it, or name it again with --model FILE.py:FUNCTION"
        )
    return ""


def _sized(spec: JobSpec) -> tuple[JobSpec, str]:
    """A built-in workload's job with no size gets its usual run (90 epochs of ResNet-50),
    said; your own model gets none: resolve_job asks for --samples."""
    if any(v is not None for v in (spec.epochs, spec.samples, spec.steps, spec.tokens)):
        return spec, ""
    from gpuscout.workloads import WORKLOADS

    name = spec.workload
    if spec.run is not None and not spec.run.config.model:
        name = spec.run.workload
    workload = WORKLOADS.get(name or "")
    if workload is None:
        return spec, ""
    note = f"its size: {workload.default_epochs_why} (price another with --epochs N)"
    return replace(spec, epochs=workload.default_epochs), note


def choose_job(choice: JobChoice, catalog: Catalog) -> Chosen:
    """The job to price: the one named, else ``choice.assumed`` (said, with how to change it).

    A stored run whose model file is gone has no job to price: the report says so. Anything
    else wrong with a named job (no size for your model, an unknown workload) is the user's to
    fix, and raises :class:`UserError`."""
    spec = choice.spec
    if spec.run is not None and (why := _gone(spec.run)):
        return Chosen(None, f"the job is run {spec.run.id}'s set-up, but {why}", spec)
    assumed = not spec.given
    if assumed:
        spec = replace(spec, workload=choice.assumed)
    spec, size_note = _sized(spec)
    job = resolve_job(spec, catalog)
    said = f"assumed: {choice.assumed_why} — {HOW_TO_NAME}" if assumed else ""
    return Chosen(job, "; ".join(n for n in (said, size_note) if n), spec)


def _matches(run: RunResult, job: Job) -> bool:
    if job.model is not None:
        return bool(run.config.model) and same_model(run.config.model or "", job.model)
    return run.config.model is None and run.workload == job.workload


def trace_models(runs: Sequence[RunResult], chosen: Chosen) -> dict[str, Traced]:
    """Per workload among the runs that is the job or a user model: the profile its GPU rows
    are predicted from, or why there is none. The job's own rows use the job's profile, so the
    ranking and the advice cannot disagree; other models are traced at gpuscout's default batch
    for a model and the articles' precision (cached after the first time)."""
    from gpuscout.predict.profile_trace import get_user_profile

    job, spec = chosen.job, chosen.spec
    dataset = spec.samples if spec is not None and spec.epochs is not None else None
    out: dict[str, Traced] = {}
    for run in runs:
        name = run.workload
        if name in out or run.mode != "train" or name.startswith(FIT_PREFIX):
            continue
        if job is not None and _matches(run, job):
            out[name] = Traced(job.profile, epoch_samples=dataset, setup="as the job is priced")
        elif run.config.model and (why := _gone(run)):
            out[name] = Traced(None, why)
        elif run.config.model:
            try:
                profile = get_user_profile(
                    run.config.model, MODEL_BATCH, PREDICT_PRECISION, run.backend
                )
            except ImportError as exc:  # a report runs without TensorFlow; tracing needs it
                out[name] = Traced(None, f"tracing it needs {exc.name or 'TensorFlow'} "
                                   "(pip install 'gpuscout[cpu]')")  # fmt: skip
            except UserError as exc:
                out[name] = Traced(None, f"it could not be traced: {exc.problem}")
            except GpuscoutError as exc:  # e.g. TensorFlow missing, said with the fix
                out[name] = Traced(None, f"it could not be traced: {exc}")
            else:
                setup = f"your model at batch {MODEL_BATCH}, gpuscout's default for a model"
                out[name] = Traced(profile, setup=setup)
    return out


def report_on(
    runs: list[RunResult],
    catalog: Catalog,
    chosen: Chosen,
    *,
    title: str = "gpuscout report",
    answers: list[bool] | None = None,
    constraints: Mapping[str, Any] | None = None,
    summary: Summary | None = None,
    model: Session | None = None,
) -> Report:
    """The report on ``runs`` for the job ``chosen`` (see :func:`choose_job`)."""
    return build_report(
        runs, catalog, title=title, job=chosen.job, job_note=chosen.note, answers=answers,
        assumptions=Assumptions(), constraints=constraints, traced=trace_models(runs, chosen),
        summary=summary, model=model,
    )  # fmt: skip


__all__ = ["Chosen", "JobChoice", "choose_job", "report_on", "same_model", "trace_models"]
