"""The main job: measure this machine, predict the catalog, price the job, advise, report.

``scout --model my.py:build --samples 1200000 --epochs 50 --deadline 48h`` is the whole
journey in one command: your model is traced (for the predictions) and measured here, every
catalog GPU is predicted for it, priced, ranked, and the report opens with the answer.

The job is resolved first, so a job that cannot be priced fails in seconds, not after minutes
of measuring. Each model or workload is then measured in its own child process under
``bench``'s protocol and stored the moment it ends, so an interrupted scout keeps what it
measured. Everything after measuring is arithmetic on those runs and the catalog, done by the
same code as ``gpuscout report`` (:mod:`gpuscout.assemble`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuscout.assemble import JobChoice, choose_job, report_on
from gpuscout.catalog import Catalog
from gpuscout.core import articles
from gpuscout.core.errors import UserError
from gpuscout.core.records import Backend, BenchConfig, RunResult
from gpuscout.core.run_settings import TRAINING_PRECISION, Precision
from gpuscout.predict.job import JobSpec
from gpuscout.predict.session import Session, session
from gpuscout.report.document import Report
from gpuscout.store import Store

# Article 001's benchmark (ResNet-50) for the ranking, then article 000's seed model (the MLP);
# see gpuscout.core.articles. The first is the job priced and advised.
DEFAULT_PLAN = ((articles.BENCHMARK_WORKLOAD, 60.0), ("mlp", 15.0))


MODEL_SECONDS = 60.0  # measuring your model here, unless --seconds says otherwise


@dataclass(frozen=True)
class ScoutPlan:
    measure: tuple[tuple[str, float], ...] = DEFAULT_PLAN  # (workload, seconds) in order
    # Your model (FILE.py:FUNCTION or FILE.keras), measured first, for model_seconds.
    model: str | None = None
    model_seconds: float = MODEL_SECONDS
    model_batch: int | None = None  # the batch to measure it at (None: the backend's default)
    # The job priced: the one named in job.spec (your model, a workload, a stored run's
    # set-up) and its size; none named: the first workload measured, said as assumed.
    job: JobSpec = field(default_factory=JobSpec)
    constraints: dict[str, Any] = field(default_factory=dict)  # the advice's (advise.Request)
    answers: list[bool] | None = None
    note: str | None = None
    title: str = "gpuscout scout"
    backend: Backend = "tensorflow"  # the framework Keras measures on
    stack: str | None = None  # --stack: the software level where no stored run anchors


@dataclass
class ScoutResult:
    runs: list[RunResult]
    report: Report
    written: list[Path] = field(default_factory=list)


def parse_measure(text: str) -> tuple[tuple[str, float], ...]:
    """'resnet50=60,mlp=15' -> ((resnet50, 60.0), (mlp, 15.0)); every workload must exist."""
    from gpuscout.workloads import get_workload

    plan = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        name, _, seconds = item.partition("=")
        try:
            value = float(seconds) if seconds else 30.0
        except ValueError:
            value = -1.0
        if not value > 0:
            raise UserError(
                f"'{item}' in --measure is not WORKLOAD=SECONDS with SECONDS > 0.",
                "e.g. --measure resnet50=60,mlp=15.",
            )
        plan.append((get_workload(name, own_model=False).name, value))
    if not plan:
        raise UserError("--measure names no workload.", "e.g. --measure resnet50=60,mlp=15.")
    return tuple(plan)


def measuring_precision(plan: ScoutPlan) -> Precision:
    """The precision scout measures in: on a machine with an NVIDIA GPU, the job's (a stored
    run anchors only predictions in its own precision, so measuring fp32 for a mixed-precision
    job would anchor nothing); on a CPU, fp32 (a CPU run anchors no GPU, and float16 on a CPU
    is emulated, slow and says nothing of a GPU)."""
    from gpuscout.measure.nvml import open_nvml

    nvml, _ = open_nvml()
    if nvml is None:
        return "fp32"
    nvml.close()
    wanted = plan.job.precision or TRAINING_PRECISION
    return (
        "mixed_bfloat16"
        if wanted == "mixed_bfloat16"
        else ("mixed_float16" if wanted == "mixed_float16" else "fp32")
    )


def _session(plan: ScoutPlan, catalog: Catalog, store: Store) -> Session:
    """The one prediction session: the store's GPU runs (those just measured too) anchor, or
    the job's own stored run alone (``--from-run``)."""
    run = plan.job.run
    return session(catalog, store, stack=plan.stack, from_run=run.id if run else None,
                   strict=False, backend=plan.backend)  # fmt: skip


def scout(
    plan: ScoutPlan,
    store: Store,
    catalog: Catalog,
    on_stage: Callable[[str], None] = lambda _: None,
    **progress: Any,
) -> ScoutResult:
    """Resolve the job, measure your model and each planned workload here, store each run,
    and build the report on those runs for that job.

    ``progress`` is handed to :func:`gpuscout.measure.runner.run_isolated` (``on_progress``,
    ``on_phase``) for the live display.
    """
    from gpuscout.measure.runner import run_isolated

    first = plan.measure[0][0] if plan.measure else articles.BENCHMARK_WORKLOAD
    choice = JobChoice(plan.job, assumed=first, assumed_why="the first workload scout measured")
    # Before measuring: a job that cannot be priced fails in seconds (your model is traced
    # here, for the predictions), not after minutes. No stage line before it: a refusal is
    # one line.
    chosen = choose_job(choice, catalog)
    if chosen.job is not None:
        on_stage(f"the job: {chosen.job.label}")
    dataset = plan.job.samples if plan.job.epochs is not None else None  # an epoch's size
    precision = measuring_precision(plan)
    configs = [
        BenchConfig(model=plan.model, seconds=plan.model_seconds, batch_size=plan.model_batch,
                    epoch_samples=dataset, backend=plan.backend, precision=precision)
    ] if plan.model else []  # fmt: skip
    configs += [BenchConfig(workload=w, seconds=s, backend=plan.backend, precision=precision)
                for w, s in plan.measure]  # fmt: skip
    runs = []
    for i, config in enumerate(configs, 1):
        what = config.model or config.workload
        on_stage(f"measuring {what} ({i}/{len(configs)}, {config.seconds:g} s)")
        result = run_isolated(config, **progress)
        if plan.note:
            result = result.model_copy(update={"note": plan.note})
        runs.append(store.save(result))
    on_stage("predicting, pricing and advising")
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        reasons = "; ".join(f"{r.workload}: {r.message}" for r in runs)
        raise UserError(f"nothing could be measured here ({reasons}).", "see gpuscout doctor.")
    report = report_on(
        runs, catalog, chosen, title=plan.title, answers=plan.answers,
        constraints=plan.constraints, model=_session(plan, catalog, store),
    )  # fmt: skip
    return ScoutResult(runs, report)
