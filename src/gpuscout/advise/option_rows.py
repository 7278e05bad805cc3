"""One priced option of a recommendation: its time and money on the way it is paid for, both
again at the ends of its prediction's range, what the deadline and budget risk there, and its
reasons in words (``advise.recommend`` builds and ranks them)."""

from __future__ import annotations

from gpuscout.advise.batch import batch_words
from gpuscout.advise.candidates import Candidate, Request, dollars
from gpuscout.catalog import Catalog, Gpu
from gpuscout.core.units import fmt_gb, fmt_hours, fmt_rate, fmt_usd
from gpuscout.predict.predictor import Prediction
from gpuscout.price.cost import Assumptions, CostLine, Option, cost_line
from gpuscout.price.instances import Purchase, Rental

__all__ = ["candidate", "explain", "risks"]


def candidate(
    gpu: Gpu, row: Prediction, pay: Rental | Purchase, hours_one: float, need_gb: float,
    assumptions: Assumptions, rent: Rental | None = None,
) -> Candidate:  # fmt: skip
    """One priced option: the job's time and cost on ``row.count`` GPUs paid for by ``pay``,
    and both again at the ends of the prediction's range (a speed x``low/central`` takes the
    work x``central/low`` as long; a machine's start-up does not change). An owned option's
    break-even is against ``rent``, the cheapest rental of as many of the GPU (if any)."""
    bought = pay if isinstance(pay, Purchase) else None
    rented = pay if isinstance(pay, Rental) else None
    option = Option(
        gpu_id=gpu.id,
        count=row.count,
        speedup=1.0,
        scaling=row.scaling_efficiency,
        tdp_w=gpu.board_power_w()[0],
        consumer=gpu.market == "consumer",
        provider=rented.provider if rented else "owned",
        usd_per_hour=rented.usd_per_hour if rented else None,
        purchase_usd=bought.usd if bought else None,
        rent_usd_per_hour=rent.usd_per_hour if bought and rent else None,
        rent_seen=(rent.provider, rent.how, rent.seen) if bought and rent else None,
        condition=bought.condition if bought else None,
    )
    central = row.samples_per_second

    def at(speed: float) -> CostLine:
        return cost_line(option, hours_one * central / max(speed, 1e-12), assumptions)

    line, slow, fast = at(central), at(min(row.low, central)), at(max(row.high, central))
    return Candidate(
        gpu=gpu.id,
        count=row.count,
        provider=option.provider,
        hours=line.hours + line.rework_hours,
        startup_hours=line.startup_hours,
        usd_per_hour=line.usd_per_hour,
        total_usd=line.effective_usd,
        samples_per_second=central,
        memory_gb=need_gb,
        upfront_usd=bought.usd if bought else None,
        rental_usd=None if bought else line.total_usd + line.rework_usd,
        price_note=pay.how,
        fast_hours=fast.hours + fast.rework_hours,
        slow_hours=slow.hours + slow.rework_hours,
        slow_paid_usd=bought.usd if bought else slow.total_usd + slow.rework_usd,
        condition=bought.condition if bought else "",
        break_even=line.break_even.describe() if line.break_even else "",
    )


def risks(c: Candidate, req: Request) -> list[str]:
    """What the deadline and the budget risk at the slow end of ``c``'s range (its central
    figures meet both, or it was left out)."""
    out = []
    if req.deadline_hours is not None and c.slow_hours > req.deadline_hours:
        out.append(f"may miss the {req.deadline_hours:g} h deadline: "
                   f"{fmt_hours(c.slow_hours)} at its range's slow end")  # fmt: skip
    if req.budget_usd is not None and c.slow_paid_usd > req.budget_usd:
        out.append(f"may exceed the ${req.budget_usd:,.0f} budget: {dollars(c.slow_paid_usd)} "
                   "at its range's slow end")  # fmt: skip
    return out


def explain(c: Candidate, req: Request, catalog: Catalog) -> None:
    gpu = catalog.gpus[c.gpu]
    budget = req.budget_usd
    measured = f" ({c.measured})" if c.measured else ""
    up = f"; start-up {fmt_hours(c.startup_hours)} included" if c.startup_hours else ""
    c.reasons.append(
        f"{fmt_hours(c.hours)} (range {fmt_hours(c.fast_hours)} to {fmt_hours(c.slow_hours)}"
        f"{up}) at {fmt_rate(c.samples_per_second)} {req.unit}/s{measured}"
    )
    if c.upfront_usd is not None:
        c.reasons.append(
            f"{fmt_usd(c.total_usd)} for this job, amortised (owned, ${c.usd_per_hour:,.2f}/h)"
        )
        within = f" ≤ budget ${budget:,.0f}" if budget is not None else ""
        c.reasons.append(f"up-front {dollars(c.upfront_usd)}{within} ({c.price_note})")
        c.reasons.append(c.break_even or f"no rental of {c.count} x {c.gpu} in the catalog to "
                         "set it against")  # fmt: skip
    else:
        c.reasons.append(
            f"{fmt_usd(c.total_usd)} ({c.provider}, ${c.usd_per_hour:,.2f}/h: {c.price_note})"
        )
        if budget is not None:
            c.reasons.append(f"rental {dollars(c.paid_usd)} ≤ budget ${budget:,.0f}")
    if req.deadline_hours is not None:
        deadline = f"the {req.deadline_hours:g} h deadline"
        c.reasons.append(
            f"meets {deadline} even at its range's slow end"
            if c.slow_hours <= req.deadline_hours
            else f"meets {deadline} as predicted, not at its range's slow end"
        )
    c.reasons.extend(c.risks)
    estimated = c.batch != req.profile.batch and req.profile.per_sample is None
    c.reasons.append(
        f"at {batch_words(c.batch, c.accumulation, c.global_batch)}"
        + (" (-b)" if req.fixed_batch else "")
        + (f", its speed estimated from the step's split at batch {req.profile.batch}"
           if estimated else "")
    )  # fmt: skip
    if c.batch_hint:
        c.reasons.append(c.batch_hint)
    c.reasons.append(f"fits: {fmt_gb(c.memory_gb)} of {gpu.memory_gb:g} GB")
    if c.pareto:
        c.reasons.append("on the time-cost Pareto front: nothing is both faster and cheaper")
    for feature in sorted(req.require):
        c.reasons.append(f"has {feature}")
