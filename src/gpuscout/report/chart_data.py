"""The data behind the report's scaling and monitor charts: scaling curves (measured sweeps
and the predictor's), and a run's monitor timeline in display units.

Built by :func:`gpuscout.report.document.build_report`; drawn by ``charts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuscout.core.records import RunResult
from gpuscout.predict.profile import Profile
from gpuscout.predict.session import Session

SCALING_COUNTS = (1, 2, 4, 8)
SCALING_GPUS = ("rtx-4090", "a100-80gb-sxm", "h100-sxm")


@dataclass(frozen=True)
class Curve:
    """Scaling efficiency against GPU (or device) count: a sweep's runs, or the predictor's."""

    label: str
    kind: Literal["measured", "predicted"]
    counts: list[int]
    efficiency: list[float]
    low: list[float | None] = field(default_factory=list)
    high: list[float | None] = field(default_factory=list)


@dataclass(frozen=True)
class Timeline:
    """A run's monitor samples, in display units, grouped into the three panels drawn."""

    run_id: int
    label: str
    t: list[float]
    utilization: dict[str, list[float | None]]  # percent
    clocks: dict[str, list[float | None]]  # MHz
    memory: dict[str, list[float | None]]  # GiB


def measured_curves(runs: list[RunResult]) -> list[Curve]:
    """One curve per ``bench --scaling`` sweep found among the runs."""
    sweeps: dict[str, list[RunResult]] = {}
    for run in runs:
        d = run.distribution
        if run.status == "ok" and d is not None and d.scaling is not None:
            sweeps.setdefault(d.scaling.sweep, []).append(run)
    curves = []
    for members in sweeps.values():
        members.sort(key=lambda r: r.replicas)
        points = [
            (r.replicas, r.distribution.scaling.efficiency)
            for r in members
            if r.distribution and r.distribution.scaling and r.distribution.scaling.efficiency
        ]
        if len(points) < 2:
            continue
        first = members[0]
        curves.append(
            Curve(
                label=f"measured: {first.workload} on {first.device} (runs "
                f"{', '.join(str(r.id) for r in members)})",
                kind="measured",
                counts=[n for n, _ in points],
                efficiency=[e.median for _, e in points],
                low=[e.ci_low for _, e in points],
                high=[e.ci_high for _, e in points],
            )
        )
    return curves


def predicted_curves(profile: Profile, model: Session) -> list[Curve]:
    """The fitted scaling model's efficiencies on a few GPUs, as ``predict`` gives them."""
    curves = []
    for gpu_id in SCALING_GPUS:
        gpu = model.catalog.gpus.get(gpu_id)
        if gpu is None:
            continue
        rows, _ = model.predict(profile, [gpu], list(SCALING_COUNTS), reference=gpu)
        curves.append(
            Curve(
                label=f"predicted: {gpu.name}" + (f" ({rows[-1].link})" if rows[-1].link else ""),
                kind="predicted",
                counts=[r.count for r in rows],
                efficiency=[r.scaling_efficiency for r in rows],
            )
        )
    return curves


def timeline(run: RunResult) -> Timeline | None:
    tl = run.monitor_timeline
    if len(tl.get("t", [])) < 2 or run.id is None:
        return None

    def scaled(key: str, factor: float) -> list[float | None]:
        return [None if v is None else v * factor for v in tl[key]]

    cpu_names = (("cpu", "CPU, all cores"), ("cpu_busiest", "CPU, busiest core"))
    util = {name: scaled(key, 100) for key, name in cpu_names if key in tl}
    clocks: dict[str, list[float | None]] = {}
    memory = {"process RSS": scaled("rss", 2**-30)} if "rss" in tl else {}
    for key in sorted(tl):
        if not key.startswith("gpu"):
            continue
        gpu, _, what = key.partition(".")
        if what == "utilization":
            util[f"{gpu.upper()} busy"] = scaled(key, 100)
        elif what == "sm_clock_mhz":
            clocks[f"{gpu.upper()} SM clock"] = scaled(key, 1)
        elif what == "memory_used_bytes":
            memory[f"{gpu.upper()} memory"] = scaled(key, 2**-30)
    return Timeline(
        run.id,
        f"run {run.id}: {run.workload} on {run.device}",
        [v or 0.0 for v in tl["t"]],
        util,
        clocks,
        memory,
    )
