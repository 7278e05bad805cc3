"""The answer in one line: the option recommended for the stated job, its time and cost, and
the one or two reasons that decided it.

Every command that advises (``advise``, ``scout``, ``report``) opens with this line, worded
here once, so a user reads the same answer wherever it is printed. A ranked table answers
"which options, in what order"; a user who asked "which GPU?" wants the first row as a
sentence, with why it won over the rest, before any table.
"""

from __future__ import annotations

from gpuscout.advise.recommend import Advice, Candidate, Request
from gpuscout.advise.ties import limit
from gpuscout.core.units import fmt_hours, fmt_usd
from gpuscout.predict.uncertainty import relative_error

# A job this short costs next to nothing anywhere: the choice hardly matters, and saying so is
# the honest reason (a report once advised renting 8 GPUs for a 958 ms job).
TRIVIAL_HOURS = 1 / 60
BALANCED_WORDS = "best balance of time and cost (lowest hours x dollars)"


def option_words(c: Candidate) -> str:
    """'rent 1 x rtx-4090 on runpod' or 'buy 2 x rtx-4090'."""
    if c.provider == "owned":
        return f"buy {c.count} x {c.gpu}" + (" used" if c.condition == "used" else "")
    return f"rent {c.count} x {c.gpu} on {c.provider}"


def cost_words(c: Candidate) -> str:
    """The time and the money, owned options' purchase said apart from the job's share."""
    if c.provider == "owned" and c.upfront_usd is not None:
        return (
            f"{fmt_hours(c.hours)}, ${c.upfront_usd:,.0f} up front "
            f"({fmt_usd(c.total_usd)} of it for this job)"
        )
    return f"{fmt_hours(c.hours)}, {fmt_usd(c.total_usd)}"


def _constraints(req: Request) -> str:
    """' that meets the 48 h deadline and the $2,000 budget' (or '')."""
    parts = []
    if req.deadline_hours is not None:
        parts.append(f"the {req.deadline_hours:g} h deadline")
    if req.budget_usd is not None:
        parts.append(f"the ${req.budget_usd:,.0f} budget")
    return f" that meets {' and '.join(parts)}" if parts else ""


def reasons(advice: Advice, req: Request) -> list[str]:
    """Why the first option won: what the objective picked (said as what it is: cheapest,
    fastest, or the best time x cost) within the constraints, and whether it meets them even at
    its range's slow end or which risk it takes (no option is safe); then that nothing beats it
    on both time and cost (the Pareto front, in words), or that the job is too short to
    matter; and what the other end of the trade-off offers for about the same money."""
    best, options = advice.ranked[0], advice.ranked
    cheapest = best.total_usd <= min(c.total_usd for c in options)
    fastest = best.hours <= min(c.hours for c in options)
    within = _constraints(req)
    if cheapest and fastest:
        first = f"fastest and cheapest option{within}"
    elif req.objective == "cheapest" or (req.objective == "balanced" and cheapest):
        first = f"cheapest option{within}"
    elif req.objective == "fastest" or (req.objective == "balanced" and fastest):
        first = f"fastest option{within}"
    else:
        first = f"{BALANCED_WORDS}{within}"
    if within and not best.risks:
        first += " even at its range's slow end"
    elif best.risks:
        first += (" as predicted; no option is safe at its range's slow end, and this one "
                  + "; ".join(best.risks))  # fmt: skip
    out = [first]
    if best.hours - best.startup_hours < TRIVIAL_HOURS:  # the work, a machine's start-up aside
        return [first, "the job takes under a minute, so the choice hardly matters"]
    if best.pareto:
        out.append("nothing else is both faster and cheaper")
    return out + _alternative(advice, req)


def _alternative(advice: Advice, req: Request) -> list[str]:
    """The other end of the trade-off, where it is worth a look: ranked cheapest, the fastest
    option the model cannot tell from it on cost (``advise.ties.limit``); ranked fastest or
    balanced, the cheapest option, with its time. Options at risk where the first is safe are
    not offered."""
    best = advice.ranked[0]
    safe = [c for c in advice.ranked if not c.risks or best.risks]
    if req.objective == "cheapest":
        most = limit("cheapest", relative_error())
        same = [c for c in safe if c.total_usd <= best.total_usd * most]
        other = min(same, key=lambda c: c.hours, default=best)
        if other is best or best.hours / other.hours < 1.5:
            return []
        return [
            f"for about the same money ({fmt_usd(other.total_usd)}, not distinguishable on cost)"
            f" {_short(other)} takes {fmt_hours(other.hours)}, "
            f"{best.hours / other.hours:.1f}x sooner"
        ]
    other = min(safe, key=lambda c: (c.total_usd, c.hours))
    if other is best or best.total_usd / max(other.total_usd, 1e-9) < 1.2:
        return []
    return [
        f"the cheapest option, {_short(other)}, takes {fmt_hours(other.hours)} for "
        f"{fmt_usd(other.total_usd)} ({best.total_usd / max(other.total_usd, 1e-9):.1f}x less)"
    ]


def _short(c: Candidate) -> str:
    return c.label


def headline(advice: Advice, req: Request, job: str) -> str:
    """'For 50 epochs x 1,200,000 samples of your model cnn.py: rent 1 x rtx-4090 on runpod —
    6.1 h, $4.20; cheapest option that meets the 48 h deadline; nothing else is both faster
    and cheaper'. ``job``: the job in words (``predict.job.Job.label``)."""
    best = advice.ranked[0]
    why = "; ".join(reasons(advice, req) + ([advice.batch_hint] if advice.batch_hint else []))
    return f"For {job}: {option_words(best)} — {cost_words(best)}; {why}"


def no_option(job: str, why: str) -> str:
    """The line when nothing can be recommended, and why (what the constraints left out)."""
    return f"For {job}: no recommendation — {why}"


__all__ = ["cost_words", "headline", "no_option", "option_words", "reasons"]
