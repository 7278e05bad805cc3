"""The notes a recommendation carries beside its ranking: how risk, machines, memory and money
were judged, each in one line (``advise.recommend`` puts them among its assumptions)."""

from __future__ import annotations

from gpuscout.advise.candidates import Candidate, Request, dollars
from gpuscout.catalog import Catalog
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.core.units import fmt_gb
from gpuscout.predict import scaling
from gpuscout.predict.fit_options import fit_options
from gpuscout.predict.profile import Profile
from gpuscout.price.instances import ASSUMED_RATE, HOST_NOTE, not_sold_new, separate_instances_gbit

__all__ = ["budget_note", "fit_notes", "money_notes", "over_budget", "risk_note", "split_note"]


def fit_notes(profile: Profile, need_gb: float, too_small: dict[float, list[str]]) -> list[str]:
    """The GPUs left out for memory, by size, with what would fit the step on them (a decoder
    LLM's ``predict.fit_options``: checkpointing, QLoRA, sharding), so a 24 GB card is not
    dropped without saying that ``--checkpointing`` brings it back."""
    out = []
    for memory_gb, ids in sorted(too_small.items(), reverse=True):
        ways = fit_options(profile, memory_gb * 1e9 * MEMORY_HEADROOM)[:2]
        said = "; ".join(f"{how} ({fmt_gb(need / 1e9)})" for how, need in ways)
        out.append(
            f"{', '.join(ids)} ({memory_gb:g} GB): the step needs {fmt_gb(need_gb)}"
            + (" at batch 1 per GPU" if profile.batch == 1 else "")
            + ", more than "
            f"{MEMORY_HEADROOM:.0%} of it" + (f"; would fit with {said}" if said else "")
            + (" (--checkpointing)" if ways and "checkpointing" in ways[0][0] else "")
        )  # fmt: skip
    return out


def risk_note(req: Request) -> list[str]:
    """How a deadline or a budget is checked against each option's range."""
    given = [w for w, v in (("deadline", req.deadline_hours), ("budget", req.budget_usd))
             if v is not None]  # fmt: skip
    if not given:
        return []
    return [
        f"risk: each option's {' and '.join(given)} checked at its predicted time and cost and "
        "at its range's slow end (the range below); one that meets them only as predicted is "
        "marked 'may miss' or 'may exceed', and ranks after every option that meets them at "
        "the slow end"
    ]


def split_note(split: dict[tuple[int, int, str], list[str]]) -> list[str]:
    """One line for the counts that run on several machines (a form factor's limit)."""
    if not split:
        return []
    parts = [f"{m * k} as {m} machines x {k}: {', '.join(ids)} ({why})"
             for (m, k, why), ids in split.items()]  # fmt: skip
    return [
        f"more GPUs than one machine holds run on several, over a network "
        f"({scaling.DEFAULT_NETWORK_GBIT:g} Gb/s assumed between whole machines, "
        f"{separate_instances_gbit():g} Gb/s between separate smaller instances: each "
        f"option's price says how it is rented): {'; '.join(parts)}"
    ]


def over_budget(c: Candidate, budget: float) -> str:
    """The reason an option is left out by the budget, saying which money exceeded it."""
    what = "up-front purchase" if c.paid_basis == "up-front" else "job's rental"
    return f"over budget: the {what} > ${budget:,.0f}"


def budget_note(over: list[Candidate], budget: float, lead: str = "") -> str:
    """The cheapest option the budget left out, owned and rented: what it would pay."""
    parts = []
    for basis in ("up-front", "rental"):
        mine = [c for c in over if c.paid_basis == basis]
        if mine:
            c = min(mine, key=lambda c: c.paid_usd)
            parts.append(f"{lead}{c.label}: {basis} {dollars(c.paid_usd)} > budget ${budget:,.0f}")
    return "; ".join(parts)


def money_notes(
    req: Request, feasible: list[Candidate], over: list[Candidate], catalog: Catalog
) -> list[str]:
    """How the options were priced and what a budget is compared with."""
    notes = [
        "rentals of n GPUs: every way each provider sells them is an option, timed as it is "
        "laid out: its n-GPU instance (or a pod of n, where it sells any count), several "
        "smaller instances (as many machines, over a network: separate_instances_gbit "
        f"{separate_instances_gbit():g} Gb/s, cost_defaults.csv), or its smallest bigger "
        "instance with all of it paid for"
    ]
    assumed = sorted({f"{c.gpu} ({c.provider})" for c in feasible
                      if ASSUMED_RATE in c.price_note})  # fmt: skip
    if assumed:
        notes.append(f"n x a smaller instance's per-GPU price ({ASSUMED_RATE}) for: "
                     f"{', '.join(assumed)}")  # fmt: skip
    if req.owned:
        notes.append(
            "owned options bought new (the catalog's dated street price, else the launch MSRP, "
            "said as such) and used (its most recent dated used price), paid up front x the GPU "
            f"count ({HOST_NOTE}); their 'total' is the share amortised over this job, and each "
            "says how many hours a month it must train to cost less than renting as many"
        )
        ended = [w for g in catalog.gpus.values() if (w := not_sold_new(catalog, g))]
        notes += ended
    if req.budget_usd is not None:
        left = f"; left out: {budget_note(over, req.budget_usd, 'cheapest ')}" if over else ""
        notes.append(
            f"budget ${req.budget_usd:,.0f} compared with money paid: an owned option's up-front "
            "purchase, a rented option's rental for the job (hours, failure rework included, x "
            f"$/h; a cost of delay is not paid), not the amortised cost per job{left}"
        )
    return notes
