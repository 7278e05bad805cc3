"""The ranking objectives, and which options at the top of a ranking the model cannot tell
apart on the objective that ranks them.

A tie is judged on the ranked figure's own uncertainty, not on the speed's. The predictions'
out-of-sample error is on relative speed (``Calibration.relative_error``, about 15 %); it
reaches each objective through how that objective scales with speed:

- ``fastest`` ranks hours, which are 1/speed: the speed error, once;
- ``cheapest`` ranks the job's cost, hours x the option's $/h, plus failure rework and
  delay, both proportional to the hours (``price.cost``): with the price taken as certain,
  the speed error, once;
- ``balanced`` ranks (hours / fastest) x (cost / cheapest), about hours^2 x price: the speed
  error twice.

Two options tie when their objective values are closer than that error allows for a ratio of
two predictions (``predict.ranking.threshold`` at that power). So a slow cheap option and a
fast dear one whose balanced scores come out close tie on ``balanced`` (which of them wins
depends on the speeds, squared) but not on ``fastest``, and options 3.8x apart in time are
never tied on ``fastest``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from gpuscout.predict import ranking

Objective = Literal["cheapest", "fastest", "balanced"]
# The default: the cheapest option that meets the deadline and budget (at its range's slow end
# where one can: ``advise.recommend``). "balanced" ranked hours x dollars, which with
# near-linear scaling (dollars flat while hours fall) picked 8 GPUs for nearly any job; it
# stays for who wants that trade-off, said as what it is.
DEFAULT_OBJECTIVE: Objective = "cheapest"
OBJECTIVE_WORDS: dict[str, str] = {
    "cheapest": "the lowest cost of the job that meets the deadline and budget",
    "fastest": "the shortest time within the budget and deadline",
    "balanced": "the lowest hours x dollars, each against the best option's: halving the "
    "time weighs as much as halving the cost",
}
# |d log(objective) / d log(speed)| for each objective (see the module docstring)
SPEED_POWER: dict[str, float] = {"fastest": 1.0, "cheapest": 1.0, "balanced": 2.0}
_HOW = {
    "fastest": "hours are 1/speed: the speed error once",
    "cheapest": "cost is hours x a certain price: the speed error once",
    "balanced": "hours x cost, each 1/speed: the speed error twice",
}


class Ranked(Protocol):
    gpu: str
    count: int
    provider: str
    hours: float
    total_usd: float

    @property
    def label(self) -> str: ...


def key(objective: Objective, items: Sequence[Ranked]) -> Callable[[Any], Any]:
    """The sort key of ``objective`` over ``items`` (smaller is better)."""
    fastest = min(c.hours for c in items)
    cheapest = min(c.total_usd for c in items)
    if objective == "cheapest":
        return lambda c: (c.total_usd, c.hours)
    if objective == "fastest":
        return lambda c: (c.hours, c.total_usd)
    return lambda c: (c.hours / fastest) * (c.total_usd / cheapest)


def value(objective: Objective, items: Sequence[Ranked]) -> Callable[[Any], float]:
    """The one figure ``objective`` ranks on (the key without its tie-breaker)."""
    score = key(objective, items)

    def first(c: Ranked) -> float:
        v = score(c)
        return float(v[0] if isinstance(v, tuple) else v)

    return first


def limit(objective: Objective, relative_error: float) -> float:
    """The ratio of two options' objective values below which they are not distinguishable."""
    return ranking.threshold(relative_error, SPEED_POWER[objective])


def top_ties(ranked: Sequence[Ranked], objective: Objective, relative: float) -> list[Ranked]:
    """The options among the first 12 whose objective value is within :func:`limit` of the
    first's (the first included, when any is). Each is within it of the first, so no two of
    them differ by more. The same GPU at another count or price is left out: the speed error
    is the GPU's and cancels between them, so what tells them apart is the price (certain)
    and the scaling model, not the error this note is about."""
    if len(ranked) < 2:
        return []
    figure = value(objective, ranked)
    top = figure(ranked[0])
    most = limit(objective, relative)
    tied: list[Ranked] = []
    seen = {ranked[0].gpu}
    for c in ranked[1:12]:
        if c.gpu in seen:
            continue
        if top > 0 and figure(c) / top < most:
            tied.append(c)
            seen.add(c.gpu)
    return [ranked[0], *tied] if tied else []


def tie_note(ranked: Sequence[Ranked], objective: Objective, relative: float) -> list[str]:
    """One line naming the options at the top the model cannot tell apart, with the
    uncertainty of the objective that ranks them."""
    tied = top_ties(ranked, objective, relative)
    if not tied:
        return []
    names = ", ".join(_name(c) for c in tied)
    speed = ranking.threshold(relative)
    return [
        f"not distinguishable at the top: {names} are within x{limit(objective, relative):.2f}"
        f" of each other on '{objective}', the uncertainty of that objective: the "
        f"predictions' out-of-sample error ({relative:.0%} on relative speed, x{speed:.2f} on "
        f"a ratio of two) propagated ({_HOW[objective]}); the order among them is not a "
        f"finding; measure before committing{_trade_off(tied, objective, speed)}"
    ]


def _name(c: Ranked) -> str:
    return c.label


def _trade_off(tied: Sequence[Ranked], objective: Objective, speed: float) -> str:
    """On 'balanced', tied options can be far apart in time and in cost, the one faster and
    the other cheaper: said, with the objectives that do tell them apart."""
    if objective != "balanced":
        return ""
    fast = min(tied, key=lambda c: c.hours)
    slow = max(tied, key=lambda c: c.hours)
    if slow.hours / fast.hours < speed or fast.total_usd <= slow.total_usd:
        return ""
    return (
        f". They trade time for money: {_name(fast)} is {slow.hours / fast.hours:.1f}x "
        f"faster, {_name(slow)} {fast.total_usd / slow.total_usd:.1f}x cheaper, and "
        "'balanced' (hours x cost) weighs the two close; --objective fastest or cheapest "
        "tells them apart"
    )
