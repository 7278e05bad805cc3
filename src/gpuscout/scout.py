"""The main job: measure this machine, predict the catalog, price the job, advise, report.

Each workload is measured in its own child process under ``bench``'s protocol and stored the
moment it ends, so an interrupted scout keeps what it measured. Everything after measuring is
arithmetic on those runs and the catalog, done by the same code as ``gpuscout report``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuscout import articles
from gpuscout.catalog import Catalog
from gpuscout.errors import UserError
from gpuscout.predict.session import session
from gpuscout.records import Backend, BenchConfig, RunResult
from gpuscout.report.document import Report, build_report
from gpuscout.store import Store

# Article 001's benchmark (ResNet-50) for the ranking, then article 000's seed model (the MLP);
# see gpuscout.articles. The first is the job priced and advised.
DEFAULT_PLAN = ((articles.BENCHMARK_WORKLOAD, 60.0), ("mlp", 15.0))


@dataclass(frozen=True)
class ScoutPlan:
    measure: tuple[tuple[str, float], ...] = DEFAULT_PLAN  # (workload, seconds) in order
    # The user's job in epochs of the first workload; None = that workload's default_epochs
    # (90 for ResNet-50, 20 for the MLP), printed with the report as an assumption.
    epochs: float | None = None
    answers: list[bool] | None = None
    note: str | None = None
    title: str = "gpuscout scout"
    backend: Backend = "tensorflow"  # the framework Keras measures on


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


def scout(
    plan: ScoutPlan,
    store: Store,
    catalog: Catalog,
    on_stage: Callable[[str], None] = lambda _: None,
    **progress: Any,
) -> ScoutResult:
    """Measure each planned workload here, store it, and build the report on those runs.

    ``progress`` is handed to :func:`gpuscout.measure.runner.run_isolated` (``on_progress``,
    ``on_phase``) for the live display.
    """
    from gpuscout.measure.runner import run_isolated

    runs = []
    for i, (workload, seconds) in enumerate(plan.measure, 1):
        on_stage(f"measuring {workload} ({i}/{len(plan.measure)}, {seconds:g} s)")
        config = BenchConfig(workload=workload, seconds=seconds, backend=plan.backend)
        result = run_isolated(config, **progress)
        if plan.note:
            result = result.model_copy(update={"note": plan.note})
        runs.append(store.save(result))
    on_stage("predicting, pricing and advising")
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        reasons = "; ".join(f"{r.workload}: {r.message}" for r in runs)
        raise UserError(f"nothing could be measured here ({reasons}).", "see gpuscout doctor.")
    report = build_report(
        runs, catalog, title=plan.title, epochs=plan.epochs, answers=plan.answers,
        main=plan.measure[0][0], model=session(catalog, store),  # the store's GPU runs too
    )  # fmt: skip
    return ScoutResult(runs, report)
