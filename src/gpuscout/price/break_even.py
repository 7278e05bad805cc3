"""Buy versus rent: how many hours a month owned GPUs must train to cost less than renting
as many of them at the catalog's cheapest on-demand rental (priced per instance size,
``price/instances.py``).

Over the amortisation period an owned option costs, each month,

    purchase / (amortization years x 12)  +  electricity $/hour x hours,

and renting costs ``rent $/hour x hours``. The two are equal at

    hours = (purchase / months) / (rent $/hour - electricity $/hour),

the break-even utilisation, printed as "h/month (x % of the month)". Where electricity alone
costs as much as the rental, or the hours exceed a month's 730, owning never breaks even.
Not counted, and said so: the host machine (CPU, memory, chassis, power supply), resale value
after the period (cards do keep some: the catalog's dated used prices), and failures (both
lose about the same time to them). The same figure, months of use at the stated utilisation
until the purchase is paid back (``months_at_utilization``), is kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

HOURS_PER_MONTH = 730.0  # 365 x 24 / 12


@dataclass(frozen=True)
class BreakEven:
    """Owned against the cheapest rental of the same GPUs."""

    hours_per_month: float | None  # None: never (even 100 % of the month does not)
    share_of_month: float | None
    months_at_utilization: float | None  # payback at the stated owned utilisation
    owned_usd_per_month: float  # the purchase spread over the amortisation period
    electricity_usd_per_hour: float
    rent_usd_per_hour: float
    rent_provider: str
    rent_how: str  # instance and price
    rent_observed: str  # when the rental price was seen
    never_because: str | None = None

    def describe(self) -> str:
        against = (
            f"the cheapest catalog rental, {self.rent_provider} at "
            f"${self.rent_usd_per_hour:,.2f}/h "
            f"({self.rent_how}; seen {self.rent_observed})"
        )
        if self.hours_per_month is None:
            return f"buying never beats renting: {self.never_because}, against {against}"
        share = self.share_of_month or 0.0
        payback = (
            f"; paid back after {self.months_at_utilization:.0f} months at the stated utilization"
            if self.months_at_utilization is not None
            else ""
        )
        return (
            f"break-even {self.hours_per_month:,.0f} h/month ({share:.0%} of the month) against "
            f"{against}: ${self.owned_usd_per_month:,.2f}/month of purchase + "
            f"${self.electricity_usd_per_hour:,.3f}/h electricity{payback}"
        )


def break_even(
    purchase_usd: float,
    amortize_years: float,
    electricity_usd_per_hour: float,
    rent_usd_per_hour: float,
    owned_utilization: float,
    rent: tuple[str, str, str],
) -> BreakEven:
    """The hours a month at which owning costs what renting does; ``rent``: (provider, how,
    observed) of the rental compared."""
    monthly = purchase_usd / (amortize_years * 12)
    margin = rent_usd_per_hour - electricity_usd_per_hour
    provider, how, seen = rent

    def result(hours: float | None, payback: float | None, why: str | None = None) -> BreakEven:
        share = None if hours is None else hours / HOURS_PER_MONTH
        return BreakEven(hours, share, payback, monthly, electricity_usd_per_hour,
                         rent_usd_per_hour, provider, how, seen, why)  # fmt: skip

    if margin <= 0:
        return result(None, None, f"electricity alone (${electricity_usd_per_hour:,.3f}/h) "
                      "costs as much as the rental")  # fmt: skip
    hours = monthly / margin
    if hours > HOURS_PER_MONTH:
        return result(None, None, f"it would take {hours:,.0f} h/month, more than a month's "
                      f"{HOURS_PER_MONTH:g} h, over {amortize_years:g} years")  # fmt: skip
    return result(hours, purchase_usd / (margin * HOURS_PER_MONTH * owned_utilization))
