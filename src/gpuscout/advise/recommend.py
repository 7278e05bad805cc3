"""A full recommendation: every catalog GPU x count x price that meets the constraints, the
Pareto front of time against cost, and a ranking by the objective, each with its reasons.

Speed, scaling and memory come from the one prediction session every command uses
(``gpuscout.predict.session``: your stored GPU runs in its calibration, the fitted scaling
model for several GPUs); money, energy, failures and delay from
``price.cost``. Nothing is dropped silently: rejected options are counted by reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gpuscout.advise.pareto import front
from gpuscout.catalog import Catalog, Gpu
from gpuscout.errors import UserError
from gpuscout.predict import ranking, scaling
from gpuscout.predict.calibrate import range_note
from gpuscout.predict.predictor import memory_needed
from gpuscout.predict.profile import Profile
from gpuscout.predict.session import Session
from gpuscout.price.cost import Assumptions, Option, cost_line
from gpuscout.units import fmt_count, fmt_hours, fmt_rate, fmt_usd

Objective = Literal["cheapest", "fastest", "balanced"]
PRESETS: dict[str, dict[str, Any]] = {
    # The user segments of article 001 (gpuscout.articles), as constraints and an objective.
    "individual": {"objective": "cheapest", "owned": True, "require": set()},
    "sme": {"objective": "cheapest", "owned": False, "require": set()},
    "large-model": {"objective": "fastest", "owned": False, "require": {"nvlink", "ecc"}},
    "production": {"objective": "balanced", "owned": False, "require": {"ecc"}},
}


@dataclass(frozen=True)
class Request:
    profile: Profile
    samples: float
    unit: str
    deadline_hours: float | None = None
    budget_usd: float | None = None
    require: frozenset[str] = frozenset()
    owned: bool = False
    cloud: bool = True
    providers: frozenset[str] | None = None
    counts: tuple[int, ...] = (1, 2, 4, 8)
    objective: Objective = "balanced"


@dataclass
class Candidate:
    gpu: str
    count: int
    provider: str
    hours: float
    usd_per_hour: float
    total_usd: float  # effective: cost + failure rework + delay
    samples_per_second: float
    memory_gb: float
    pareto: bool = False
    reasons: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Advice:
    ranked: list[Candidate]
    pareto: list[Candidate]
    rejected: dict[str, int]
    assumptions: list[str]

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "ranked": [c.to_json_dict() for c in self.ranked],
            "pareto": [c.to_json_dict() for c in self.pareto],
            "rejected": self.rejected,
            "assumptions": self.assumptions,
        }


def _check(req: Request) -> None:
    if req.budget_usd is not None and not req.budget_usd > 0:
        raise UserError(f"the budget must be positive, got {req.budget_usd:g}.", None)
    if req.deadline_hours is not None and not req.deadline_hours > 0:
        raise UserError(f"the deadline must be positive, got {req.deadline_hours:g} h.", None)
    if not req.cloud and not req.owned:
        raise UserError("neither cloud nor owned options are allowed.", "allow one of them.")


def _prices(catalog: Catalog, gpu: Gpu, req: Request) -> list[tuple[str, float | None]]:
    """(provider, $ per GPU-hour) per cloud provider (cheapest each), and owned if allowed."""
    out: list[tuple[str, float | None]] = []
    if req.cloud:
        best: dict[str, float] = {}
        for p in catalog.prices_for(gpu.id):
            wanted = req.providers is None or p.provider in req.providers
            if p.kind == "on_demand" and p.usd_per_gpu_hour and wanted:
                best[p.provider] = min(best.get(p.provider, 1e9), p.usd_per_gpu_hour)
        out += sorted(best.items())
    if req.owned and gpu.launch_price_usd:
        out.append(("owned", None))
    return out


def advise(req: Request, model: Session, assumptions: Assumptions) -> Advice:
    """Ranked, explained options for the job in ``req``, predicted by ``model`` (the session
    of :func:`gpuscout.predict.session.session`)."""
    _check(req)
    catalog, calibration = model.catalog, model.calibration
    need_gb = memory_needed(req.profile) / 1e9
    rejected: Counter[str] = Counter()
    feasible: list[Candidate] = []
    # counts one machine cannot hold, as the machines they run on: (layout, why) -> GPUs
    split: dict[tuple[int, int, str], list[str]] = {}
    for gpu in catalog.gpus.values():
        missing = [f for f in sorted(req.require) if not gpu.has(f)]
        if missing:
            rejected[f"lacks {', '.join(missing)}"] += 1
            continue
        layouts = [scaling.machines_for(gpu, n) for n in req.counts]
        for m, k in layouts:
            if m > 1:
                split.setdefault((m, k, scaling.max_per_machine(gpu)[1]), []).append(gpu.id)
        # the GPU is its own reference: relative speed is not used here
        rows, _ = model.predict(req.profile, [gpu], layouts, reference=gpu)
        one = rows[0].samples_per_second
        if not rows[0].fits_memory:
            rejected["does not fit in memory"] += len(rows)
            continue
        prices = _prices(catalog, gpu, req)
        if not prices:
            rejected["no price (cloud) or purchase price (owned)"] += len(rows)
            continue
        for row in rows:
            for provider, per_gpu in prices:
                hours_one = req.samples / one / 3600
                option = Option(
                    gpu_id=gpu.id,
                    count=row.count,
                    speedup=1.0,
                    scaling=row.scaling_efficiency,
                    tdp_w=gpu.board_power_w()[0],
                    consumer=gpu.market == "consumer",
                    provider=provider,
                    usd_per_hour=None if per_gpu is None else per_gpu * row.count,
                    purchase_usd=None if per_gpu is not None else
                    (gpu.launch_price_usd or 0) * row.count,
                    rent_usd_per_hour=None,
                )  # fmt: skip
                line = cost_line(option, hours_one, assumptions)
                wall = line.hours + line.rework_hours
                cand = Candidate(
                    gpu=gpu.id,
                    count=row.count,
                    provider=provider,
                    hours=wall,
                    usd_per_hour=line.usd_per_hour,
                    total_usd=line.effective_usd,
                    samples_per_second=row.samples_per_second,
                    memory_gb=need_gb,
                )
                if req.deadline_hours is not None and wall > req.deadline_hours:
                    rejected["misses the deadline"] += 1
                    continue
                if req.budget_usd is not None and line.effective_usd > req.budget_usd:
                    rejected["over budget"] += 1
                    continue
                feasible.append(cand)
    if not feasible:
        reasons = "; ".join(f"{n} {why}" for why, n in rejected.most_common())
        raise UserError(
            f"no option meets the constraints ({reasons}).",
            "relax the deadline or budget, allow more GPUs or owned hardware, or drop a "
            "requirement.",
        )
    best_front = front(feasible, lambda c: c.hours, lambda c: c.total_usd)
    for c in best_front:
        c.pareto = True
    ranked = sorted(feasible, key=_key(req.objective, feasible))
    for c in ranked:
        _explain(c, req, catalog)
    ties = _top_ties(ranked, req.objective, calibration.relative_error())
    notes = [
        f"job: {fmt_count(req.samples)} {req.unit} of {req.profile.workload} "
        f"({req.profile.precision}, batch {req.profile.batch} per GPU)",
        f"objective: {req.objective}; counts {', '.join(map(str, req.counts))}",
        *_split_note(split),
        *model.notes,
        calibration.describe(),
        range_note(calibration, req.profile),
        f"memory: {need_gb:.1f} GB per GPU needed (weights, gradients, optimizer state, "
        "activations; from the compiled step)",
        *assumptions.describe().values(),
        # the energy of a GPU without a board power in its row: the assumed one, said once
        *dict.fromkeys(n for c in ranked if (n := catalog.gpus[c.gpu].board_power_w()[1])),
        *ties,
    ]
    return Advice(ranked, best_front, dict(rejected), notes)


def _split_note(split: dict[tuple[int, int, str], list[str]]) -> list[str]:
    """One line for the counts that run on several machines (a form factor's limit)."""
    if not split:
        return []
    parts = [f"{m * k} as {m} machines x {k}: {', '.join(ids)} ({why})"
             for (m, k, why), ids in split.items()]  # fmt: skip
    return [
        f"more GPUs than one machine holds run on several, over a "
        f"{scaling.DEFAULT_NETWORK_GBIT:g} Gb/s network (assumed): {'; '.join(parts)}"
    ]


def _top_ties(ranked: list[Candidate], objective: Objective, relative: float) -> list[str]:
    """The options at the top the model cannot tell apart: their predicted hours (and so their
    costs, at fixed prices) differ by less than its out-of-sample error. Ranking one of them
    first would claim a precision the predictions do not have."""
    if len(ranked) < 2:
        return []
    score = _key(objective, ranked)
    first = score(ranked[0])
    value = first[0] if isinstance(first, tuple) else first
    limit = ranking.threshold(relative)
    tied: list[Candidate] = []
    for c in ranked[1:12]:
        if (c.gpu, c.count) == (ranked[0].gpu, ranked[0].count) or any(
            (c.gpu, c.count) == (t.gpu, t.count) for t in tied
        ):
            continue  # the same prediction at another price: the prices tell them apart
        other = score(c)
        v = other[0] if isinstance(other, tuple) else other
        if value > 0 and v / value < limit:
            tied.append(c)
    if not tied:
        return []
    names = ", ".join(f"{c.count} x {c.gpu} ({c.provider})" for c in [ranked[0], *tied])
    return [
        f"not distinguishable at the top: {names} are within x{limit:.2f} of each other on "
        f"'{objective}', inside the predictions' out-of-sample error ({relative:.0%} on "
        "relative speed): the order among them is not a finding; measure before committing"
    ]


def _key(objective: Objective, items: list[Candidate]) -> Any:
    fastest = min(c.hours for c in items)
    cheapest = min(c.total_usd for c in items)
    if objective == "cheapest":
        return lambda c: (c.total_usd, c.hours)
    if objective == "fastest":
        return lambda c: (c.hours, c.total_usd)
    return lambda c: (c.hours / fastest) * (c.total_usd / cheapest)


def _explain(c: Candidate, req: Request, catalog: Catalog) -> None:
    gpu = catalog.gpus[c.gpu]
    c.reasons.append(f"{fmt_hours(c.hours)} at {fmt_rate(c.samples_per_second)} {req.unit}/s")
    c.reasons.append(f"{fmt_usd(c.total_usd)} ({c.provider}, ${c.usd_per_hour:,.2f}/h)")
    if req.deadline_hours is not None:
        c.reasons.append(f"meets the {req.deadline_hours:g} h deadline")
    if req.budget_usd is not None:
        c.reasons.append(f"within the ${req.budget_usd:,.0f} budget")
    c.reasons.append(f"fits: {c.memory_gb:.1f} GB of {gpu.memory_gb:g} GB")
    if c.pareto:
        c.reasons.append("on the time-cost Pareto front: nothing is both faster and cheaper")
    for feature in sorted(req.require):
        c.reasons.append(f"has {feature}")
