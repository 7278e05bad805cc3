"""A full recommendation: every catalog GPU x count x price that meets the constraints, the
Pareto front of time against cost, and a ranking by the objective, each with its reasons.

Speed, scaling and memory come from the one prediction session every command uses
(``gpuscout.predict.session``: anchored on your stored GPU runs of the step, the fitted scaling
model for several GPUs); money, energy, failures and delay from
``price.cost``, rentals priced per instance size and purchases from ``price.instances``.
Nothing is dropped silently: rejected options are counted by reason.

A budget is money paid, never the amortised cost per job (which let $8,000 of cards pass a
$2,000 budget, and any owned option a $1 one): an owned option's purchase up front, a rented
one's rental for the job. Ties at the top are judged on the objective's own uncertainty
(``advise.ties``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from gpuscout.advise.batch import accumulated, batch_note, batch_plan, too_many
from gpuscout.advise.candidates import Advice, Candidate, Request, dollars
from gpuscout.advise.notes import (
    budget_note,
    fit_notes,
    money_notes,
    over_budget,
    risk_note,
    split_note,
)
from gpuscout.advise.option_rows import candidate, explain, risks
from gpuscout.advise.pareto import front
from gpuscout.advise.ties import OBJECTIVE_WORDS, Objective, key, tie_note
from gpuscout.catalog import Catalog, Gpu
from gpuscout.core.errors import UserError
from gpuscout.core.units import fmt_count, fmt_gb, fmt_rate
from gpuscout.predict import scaling
from gpuscout.predict.batch_hint import BatchHint, larger_batch
from gpuscout.predict.batch_size import memory_at, memory_profile
from gpuscout.predict.predictor import Prediction
from gpuscout.predict.profile import Profile
from gpuscout.predict.session import Session
from gpuscout.predict.uncertainty import relative_error
from gpuscout.price.cost import Assumptions
from gpuscout.price.instances import (
    Condition,
    Purchase,
    Rental,
    cheapest_rental,
    not_sold_new,
    purchase,
    rental_ways,
)

__all__ = ["PRESETS", "Advice", "Candidate", "Objective", "Request", "advise", "dollars"]
# the (GPU, batch per GPU) pairs of the first ranked options a larger batch is looked for on:
# the rows a user reads (--top, 5 by default) and then some, not all of a catalog's options
HINTED = 12
PRESETS: dict[str, dict[str, Any]] = {
    # The user segments of article 001 (gpuscout.core.articles), as constraints and an objective.
    "individual": {"objective": "cheapest", "owned": True, "require": set()},
    "sme": {"objective": "cheapest", "owned": False, "require": set()},
    "large-model": {"objective": "fastest", "owned": False, "require": {"nvlink", "ecc"}},
    "production": {"objective": "cheapest", "owned": False, "require": {"ecc"}},
}


def _relax(req: Request, rejected: Counter[str]) -> str:
    """What the user could relax, of what they asked for (never a deadline nobody gave)."""
    ways = []
    if req.deadline_hours is not None and rejected["misses the deadline"]:
        ways.append(f"a later --deadline than {req.deadline_hours:g} h")
    if req.budget_usd is not None and any(w.startswith("over budget") for w in rejected):
        ways.append(f"a larger --budget than ${req.budget_usd:,.0f}")
    if max(req.counts) < 8:
        ways.append("more GPUs (--counts 1,2,4,8)")
    if not req.owned:
        ways.append("owned hardware (--owned)")
    if req.providers:
        ways.append("more providers (drop --provider)")
    if req.require:
        ways.append(f"fewer requirements than --require {','.join(sorted(req.require))}")
    if rejected["does not fit in memory"] and req.fixed_batch:
        ways.append("a smaller batch (-b)")
    if rejected[too_many(req.samples_per_step)]:
        ways.append(f"a larger --global-batch than {req.samples_per_step}")
    return ("try " + ", ".join(ways) + ".") if ways else "no constraint of yours left it out."


def _check(req: Request) -> None:
    if req.budget_usd is not None and not req.budget_usd > 0:
        raise UserError(f"the budget must be positive, got {req.budget_usd:g}.", None)
    if req.deadline_hours is not None and not req.deadline_hours > 0:
        raise UserError(f"the deadline must be positive, got {req.deadline_hours:g} h.", None)
    if not req.cloud and not req.owned:
        raise UserError("neither cloud nor owned options are allowed.", "allow one of them.")
    if req.fixed_batch and req.global_batch is not None:
        raise UserError(
            f"a batch of {req.profile.batch} per GPU on every option (-b) and a global batch "
            f"of {req.global_batch} (--global-batch) contradict each other: with -b the "
            "global batch is it x the GPUs.",
            "give one of -b and --global-batch.",
        )
    if req.global_batch is not None and req.global_batch < 1:
        raise UserError(f"the global batch must be 1 or more, got {req.global_batch}.", None)


def _sized(req: Request) -> tuple[Request, list[str]]:
    """``req`` with its options no larger than the job (issue 43), and what was changed. What
    the user typed and cannot run is refused: a ``--global-batch`` of more samples than the
    whole job (not one optimizer step completes), ``--counts`` above the job's samples (GPUs
    with nothing to train). What gpuscout chose is fitted to the job instead, and said: the
    default counts above its samples are left out, and a default global batch (the job's own)
    larger than the job becomes the job's samples."""
    notes: list[str] = []
    samples = int(req.samples)
    if not req.fixed_batch and req.samples_per_step > samples:
        if req.global_batch is not None and req.batch_source.startswith("yours"):
            raise UserError(
                f"a global batch of {req.samples_per_step:,} samples ({req.batch_source}) is "
                f"more than the whole job's {samples:,}: not one optimizer step would complete.",
                "give a smaller --global-batch, or a larger job (--epochs, --samples, --steps).",
            )
        notes.append(
            f"batch: the job has {samples:,} samples in all, fewer than "
            f"{req.samples_per_step:,} ({req.batch_source or 'its own batch'}): the global "
            f"batch is taken as {samples:,}"
        )
        req = replace(req, global_batch=max(1, samples))
    if (most := max(req.counts, default=1)) > samples:
        if req.counts_given:
            raise UserError(
                f"{most:,} GPUs is more than the job's {samples:,} sample(s) in all: most of "
                "them would have nothing to train.",
                f"give counts up to {samples:,} (--counts), or a larger job.",
            )
        kept = tuple(c for c in req.counts if c <= samples) or (1,)
        notes.append(
            f"GPU counts: {', '.join(str(c) for c in req.counts if c > samples)} left out, "
            f"more GPUs than the job's {samples:,} sample(s)"
        )
        req = replace(req, counts=kept)
    return req, notes


def _prices(catalog: Catalog, gpu: Gpu, count: int, req: Request) -> list[Rental | Purchase]:
    """The ways to pay for ``count`` of ``gpu``: every way each allowed provider rents them
    (one instance, a pod of that count, several smaller instances on as many machines: each an
    option, timed as laid out; ``price.instances``), and buying them new and used if owned
    hardware is allowed (one machine)."""
    out: list[Rental | Purchase] = []
    if req.cloud:
        out += rental_ways(catalog, gpu, count, req.providers)
    if req.owned:  # bought new (a street price, else the launch MSRP) and used, where priced;
        # not new where the MSRP is below its own used price (no such offer is to be found)
        conditions: tuple[Condition, ...] = (
            ("used",) if not_sold_new(catalog, gpu) else ("new", "used")
        )
        out += [p for c in conditions if (p := purchase(catalog, gpu, count, condition=c))]
    return out


def advise(req: Request, model: Session, assumptions: Assumptions) -> Advice:
    """Ranked, explained options for the job in ``req``, predicted by ``model`` (the session
    of :func:`gpuscout.predict.session.session`)."""
    _check(req)
    req, sized = _sized(req)
    if req.data_gb:  # the user's data, copied into every rented machine: its start-up
        assumptions = replace(assumptions, data_gb=req.data_gb,
                              yours=assumptions.yours | {"data_gb"})  # fmt: skip
    catalog = model.catalog
    # the memory a GPU left out lacks: at the job's batch (-b), else at one sample per GPU
    least = memory_profile(req.profile, req.profile.batch if req.fixed_batch else 1)
    need_gb = memory_at(least, least.batch) / 1e9
    rejected: Counter[str] = Counter()
    feasible: list[Candidate] = []
    # each GPU's one-GPU prediction at each batch per GPU its options run
    one_gpu: dict[tuple[str, int], Prediction] = {}
    too_small: dict[float, list[str]] = {}  # GPUs the step does not fit, by their memory
    over: list[Candidate] = []  # left out by the budget, for the note that says by what
    # counts one machine cannot hold, as the machines they run on: (layout, why) -> GPUs
    split: dict[tuple[int, int, str], list[str]] = {}
    for gpu in catalog.gpus.values():
        if req.gpus is not None and gpu.id not in req.gpus:
            continue  # not among the GPUs the user is choosing between: not an option
        missing = [f for f in sorted(req.require) if not gpu.has(f)]
        if missing:
            rejected[f"lacks {', '.join(missing)}"] += 1
            continue
        ways = {count: _prices(catalog, gpu, count, req) for count in req.counts}
        for count in req.counts:
            m, k = scaling.machines_for(gpu, count)
            if m > 1:
                split.setdefault((m, k, scaling.max_per_machine(gpu)[1]), []).append(gpu.id)
        plan = batch_plan(req, gpu)
        if not plan.fits:
            rejected["does not fit in memory"] += len(req.counts)
            too_small.setdefault(gpu.memory_gb, []).append(gpu.id)
            continue
        rejected[too_many(req.samples_per_step)] += len(plan.too_many)
        timed: dict[int, dict[tuple[tuple[int, int], float], Prediction]] = {}
        for b in sorted({b for b, _ in plan.per_count.values()}):
            mine = {n: ways[n] for n, (at, _) in plan.per_count.items() if at == b}
            timed[b] = _timed(model, req.profile, gpu, mine, b)
        for count, prices in ways.items():
            if count not in plan.per_count:
                continue
            batch, steps = plan.per_count[count]
            first = one_gpu[(gpu.id, batch)] = timed[batch][((1, 1), scaling.DEFAULT_NETWORK_GBIT)]
            one = first.samples_per_second
            said = first.method.removeprefix("measured ") if first.method.startswith(
                "measured"
            ) else ""  # fmt: skip
            hours_one = req.samples / one / 3600
            if not prices:
                rejected["no price (cloud) or purchase price (owned)"] += 1
                continue
            # an owned option's break-even: against the cheapest rental of as many, once
            bought = any(isinstance(pay, Purchase) for pay in prices)
            rent = cheapest_rental(catalog, gpu, count) if bought else None
            for pay in prices:
                row = accumulated(timed[batch][_layout(gpu, count, pay)], steps)
                cand = candidate(gpu, row, pay, hours_one, row.memory_needed_gb, assumptions,
                                 rent if isinstance(pay, Purchase) else None)  # fmt: skip
                cand.batch, cand.accumulation = batch, steps
                cand.global_batch = batch * steps * count
                if said:
                    cand.measured = (
                        f"measured {said}"
                        if row.count == 1
                        else f"{row.count} x the "
                        f"{fmt_rate(one)} measured {said} at {row.scaling_efficiency:.0%} scaling"
                    )
                if req.deadline_hours is not None and cand.hours > req.deadline_hours:
                    rejected["misses the deadline"] += 1
                    continue
                if req.budget_usd is not None and cand.paid_usd > req.budget_usd:
                    over.append(cand)
                    rejected[over_budget(cand, req.budget_usd)] += 1
                    continue
                cand.risks = risks(cand, req)
                feasible.append(cand)
    rejected = Counter({why: n for why, n in rejected.items() if n})
    memory_notes = fit_notes(least, need_gb, too_small)
    if not feasible:
        reasons = "; ".join(f"{n} {why}" for why, n in rejected.most_common())
        reasons += "".join(f"; {n}" for n in memory_notes)
        if over:
            reasons += "; " + budget_note(over, req.budget_usd or 0.0, lead="cheapest ")
        raise UserError(f"no option meets the constraints ({reasons}).", _relax(req, rejected))
    best_front = front(feasible, lambda c: c.hours, lambda c: c.total_usd)
    for c in best_front:
        c.pareto = True
    # options that meet the deadline and budget even at their range's slow end come first;
    # an option at risk heads the ranking only where none is safe (and says which risk)
    score = key(req.objective, feasible)
    ranked = sorted(feasible, key=lambda c: (bool(c.risks), score(c)))
    hints = _batch_hints(model, req, ranked, one_gpu)
    for c in ranked:
        hint = hints.get((c.gpu, c.batch)) if c.accumulation == 1 else None
        c.batch_hint = hint.short(c.count, req.fixed_batch) if hint else ""
        explain(c, req, catalog)
    ties = tie_note(ranked, req.objective, relative_error())
    notes = [
        f"job: {req.label or f'{fmt_count(req.samples)} {req.unit} of {req.profile.workload}'}"
        f" ({req.profile.precision}, "
        + (
            f"batch {req.profile.batch} per GPU)"
            if req.fixed_batch
            else f"global batch {req.samples_per_step:,}: each option's batch per GPU in its row)"
        ),
        batch_note(req, rejected[too_many(req.samples_per_step)]),
        *sized,
        f"objective: {req.objective} ({OBJECTIVE_WORDS[req.objective]}); counts "
        f"{', '.join(map(str, req.counts))}"
        + (f"; only {', '.join(sorted(req.gpus))} (--gpus)" if req.gpus else ""),
        *risk_note(req),
        *split_note(split),
        *model.notes,
        model.describe(req.profile),
        model.range_note(req.profile),
        f"memory: {fmt_gb(memory_at(req.profile, req.profile.batch) / 1e9)} per GPU needed at "
        f"batch {req.profile.batch} (weights, gradients, optimizer state, activations; from "
        "the compiled step)"
        + ("" if req.fixed_batch else "; each option's at its own batch in its row"),
        *memory_notes,
        *assumptions.describe().values(),
        *money_notes(req, feasible, over, catalog),
        # the energy of a GPU without a board power in its row: the assumed one, said once
        *dict.fromkeys(n for c in ranked if (n := catalog.gpus[c.gpu].board_power_w()[1])),
        *ties,
    ]
    top = ranked[0]
    hint = hints.get((top.gpu, top.batch)) if top.accumulation == 1 else None
    words = hint.words(top.gpu, top.batch, top.count, req.fixed_batch) if hint else None
    shown = [catalog.gpus[g] for g in dict.fromkeys(c.gpu for c in ranked)]
    return Advice(ranked, best_front, dict(rejected), notes, req.budget_usd, words,
                  model.caveats(req.profile, shown))  # fmt: skip


def _batch_hints(
    model: Session, req: Request, ranked: list[Candidate],
    one_gpu: dict[tuple[str, int], Prediction],
) -> dict[tuple[str, int], BatchHint]:  # fmt: skip
    """A much faster larger batch (``predict.batch_hint``) on each GPU at each batch per GPU
    the ranked options run without accumulating (accumulating, a larger one does not fit),
    at most ``HINTED`` of them, in rank order: the headline's and the rows' one figure."""
    out: dict[tuple[str, int], BatchHint] = {}
    seen: set[tuple[str, int]] = set()
    for c in ranked:
        key = (c.gpu, c.batch)
        if c.accumulation > 1 or key in seen or len(seen) >= HINTED:
            continue
        seen.add(key)
        gpu = model.catalog.gpus[c.gpu]
        if hint := larger_batch(model, req.profile, gpu, one_gpu[key], c.batch):
            out[key] = hint
    return out


def _layout(gpu: Gpu, count: int, pay: Rental | Purchase) -> tuple[tuple[int, int], float]:
    """How ``count`` GPUs paid for by ``pay`` are laid out, and the network between their
    machines: a rental's instances, or owned GPUs in as few machines as the form factor
    allows."""
    if isinstance(pay, Rental):
        return pay.layout, pay.network_gbit
    return scaling.machines_for(gpu, count), scaling.DEFAULT_NETWORK_GBIT


def _timed(
    model: Session, profile: Profile, gpu: Gpu, ways: dict[int, list[Rental | Purchase]],
    batch: int,
) -> dict[tuple[tuple[int, int], float], Prediction]:  # fmt: skip
    """The step at ``batch`` per GPU predicted on every layout the ways to pay lay ``gpu``
    out in (one GPU among them), one call per network; the GPU is its own reference (relative
    speed is not used)."""
    wanted = {((1, 1), scaling.DEFAULT_NETWORK_GBIT)}
    wanted |= {_layout(gpu, n, pay) for n, pays in ways.items() for pay in pays}
    out = {}
    for net in sorted({net for _, net in wanted}):
        layouts = sorted({lay for lay, n in wanted if n == net})
        rows, _ = model.predict(
            profile, [gpu], layouts, reference=gpu, network_gbit=net, batch=batch
        )
        out.update({(lay, net): row for lay, row in zip(layouts, rows, strict=True)})
    return out
