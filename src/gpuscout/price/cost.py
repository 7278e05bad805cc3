"""Pricing a training job over options (GPU x count x provider, or owned hardware).

A job is a number of GPU-hours on a reference GPU (how article 001's cost table puts it, see
gpuscout.core.articles) or a number of samples with a predicted speed. For each option:

    wall hours   = reference GPU-hours / (speedup x count x scaling efficiency)
    cloud $      = wall hours x $/hour of the whole option (energy included in the price)
    owned $/hour = purchase / (amortization hours x utilization) + energy $/hour
    energy kWh   = count x TDP x power utilization x wall hours / 1000
    failures     = failure rate per 1000 GPU-hours x GPU-hours / 1000
    rework hours = failures x (half a checkpoint interval + restart time)
    delay $      = (wall hours + rework) / 24 x cost of delay per day

Buy versus rent (``price/break_even.py``): the hours a month owned GPUs must train to cost
less than renting as many at the catalog's cheapest on-demand rental (priced per instance
size, ``price/instances.py``), and the months of use at the stated utilization after which
the purchase is paid back. Every default comes from a sourced data file
(``price/assumptions.py``). An owned option's ``upfront_usd`` is the
purchase itself, paid before the job: what a budget is compared with (``advise --budget``),
where ``total_usd`` is only the share of it amortised over this job.

An option the catalog has no price for (the RTX 3090 of the default set has no on-demand row)
is not an error: its time, energy and failures do not depend on money, so it is still shown,
with "no price in the catalog" and why, in place of the dollar figures (issue 17: the default
``gpuscout cost --gpu-hours 1000`` used to fail on it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gpuscout.core.errors import UserError
from gpuscout.price.assumptions import Assumptions
from gpuscout.price.break_even import HOURS_PER_MONTH, BreakEven, break_even
from gpuscout.price.startup import startup_hours

__all__ = ["HOURS_PER_MONTH", "Assumptions", "CostLine", "Option", "UnpricedLine", "cost_line"]
Condition = Literal["new", "used"]


@dataclass(frozen=True)
class Option:
    """One way to run the job."""

    gpu_id: str
    count: int
    speedup: float  # one such GPU vs the reference GPU
    scaling: float  # efficiency of `count` GPUs (1.0 = linear)
    tdp_w: float
    consumer: bool
    provider: str  # a cloud provider, or "owned"
    usd_per_hour: float | None = None  # whole option, cloud
    purchase_usd: float | None = None  # whole option, owned
    rent_usd_per_hour: float | None = None  # whole option: what renting it costs, for break-even
    # the rental compared: (provider, instance and price, when the price was seen)
    rent_seen: tuple[str, str, str] | None = None
    condition: Condition | None = None  # owned: bought new or used; cloud: None
    notes: tuple[str, ...] = ()
    unpriced: str | None = None  # why there is no price (None: priced)
    unpriced_fix: str | None = None  # how to give one
    scaling_fitted: bool = False  # ``scaling`` is the fitted scaling model's (not given)

    def label(self) -> str:
        used = ", used" if self.condition == "used" else ""
        return f"{self.count} x {self.gpu_id} ({self.provider}{used})"


@dataclass
class CostLine:
    gpu: str
    count: int
    provider: str
    usd_per_hour: float
    hours: float
    gpu_hours: float
    total_usd: float
    energy_kwh: float
    energy_usd: float
    expected_failures: float
    rework_hours: float
    rework_usd: float
    delay_usd: float
    effective_usd: float  # total + rework + delay
    break_even_months: float | None = None
    notes: list[str] = field(default_factory=list)
    speedup: float = 1.0  # one such GPU against the reference GPU
    scaling_efficiency: float = 1.0  # of the option's GPUs together (1.0 = linear)
    # owned: the purchase paid before the job (``usd_per_hour`` amortises it); cloud: None
    upfront_usd: float | None = None
    condition: Condition | None = None  # owned: bought new or used
    break_even: BreakEven | None = None  # owned, against the cheapest rental of as many
    startup_hours: float = 0.0  # rented: in ``hours`` and billed (``startup_hours()``)

    def to_json_dict(self) -> dict[str, Any]:
        return {**asdict(self), "unpriced": None}


# The money fields of a CostLine: null in the JSON of an option without a price.
MONEY_FIELDS = (
    "usd_per_hour",
    "total_usd",
    "energy_usd",
    "rework_usd",
    "delay_usd",
    "effective_usd",
    "break_even_months",
    "upfront_usd",
    "break_even",
)


@dataclass
class UnpricedLine:
    """An option without a price: what does not depend on money, and why there is none."""

    gpu: str
    count: int
    provider: str
    hours: float
    gpu_hours: float
    energy_kwh: float
    expected_failures: float
    rework_hours: float
    reason: str
    fix: str
    notes: list[str] = field(default_factory=list)
    speedup: float = 1.0
    scaling_efficiency: float = 1.0
    condition: Condition | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The keys of a priced line, money ones null, and ``unpriced``: the reason."""
        out: dict[str, Any] = {
            "gpu": self.gpu,
            "count": self.count,
            "provider": self.provider,
            "hours": self.hours,
            "gpu_hours": self.gpu_hours,
            "energy_kwh": self.energy_kwh,
            "expected_failures": self.expected_failures,
            "rework_hours": self.rework_hours,
        }
        out.update(dict.fromkeys(MONEY_FIELDS))
        out["notes"] = list(self.notes)
        out["speedup"] = self.speedup
        out["scaling_efficiency"] = self.scaling_efficiency
        out["condition"] = self.condition
        out["unpriced"] = self.reason
        return out


def _validate(option: Option, reference_gpu_hours: float) -> None:
    if not reference_gpu_hours > 0:
        raise UserError(f"the job must be positive, got {reference_gpu_hours:g} GPU-hours.", None)
    if option.count < 1:
        raise UserError(f"{option.label()}: GPU count must be >= 1.", None)
    if not 0 < option.scaling <= 1:
        raise UserError(
            f"{option.label()}: scaling efficiency must be in (0, 1], got {option.scaling:g}.",
            "give e.g. --scaling 4=0.68 (68 % of linear).",
        )
    if not option.speedup > 0:
        raise UserError(f"{option.label()}: speedup must be positive.", None)


def cost_line(option: Option, reference_gpu_hours: float, a: Assumptions) -> CostLine:
    """Time, money and energy of the job on one option: a rented one's time and cost include
    its start-up (:func:`startup_hours`), billed as the job is."""
    _validate(option, reference_gpu_hours)
    compute = reference_gpu_hours / (option.speedup * option.count * option.scaling)
    startup = 0.0 if option.provider == "owned" else startup_hours(a.data_gb, a.data_copy_gbit)
    hours = compute + startup
    kw = option.count * option.tdp_w * a.power_utilization / 1000
    energy_kwh = kw * compute
    notes = list(option.notes)
    even: BreakEven | None = None
    if option.provider == "owned":
        if option.purchase_usd is None:
            raise UserError(
                f"{option.label()}: no purchase price.", "give --purchase GPU=USD per GPU."
            )
        use_hours = a.amortize_years * 12 * HOURS_PER_MONTH * a.owned_utilization
        energy_rate = kw * a.usd_per_kwh
        rate = option.purchase_usd / use_hours + energy_rate
        energy_usd = energy_kwh * a.usd_per_kwh
        if option.rent_usd_per_hour:
            seen = option.rent_seen or ("cloud", "the catalog's cheapest", "not dated")
            even = break_even(option.purchase_usd, a.amortize_years, energy_rate,
                              option.rent_usd_per_hour, a.owned_utilization, seen)  # fmt: skip
    else:
        if option.usd_per_hour is None:
            raise UserError(f"{option.label()}: no price.", "give a price per hour.")
        rate, energy_usd = option.usd_per_hour, 0.0
    total = hours * rate
    failures, rework = _rework(option, compute, a)
    rework_usd = rework * rate
    delay_usd = (hours + rework) / 24 * a.delay_usd_per_day
    return CostLine(
        gpu=option.gpu_id,
        count=option.count,
        provider=option.provider,
        usd_per_hour=rate,
        hours=hours,
        gpu_hours=compute * option.count,
        total_usd=total,
        energy_kwh=energy_kwh,
        energy_usd=energy_usd,
        expected_failures=failures,
        rework_hours=rework,
        rework_usd=rework_usd,
        delay_usd=delay_usd,
        effective_usd=total + rework_usd + delay_usd,
        break_even_months=even.months_at_utilization if even else None,
        notes=notes,
        speedup=option.speedup,
        scaling_efficiency=option.scaling,
        upfront_usd=option.purchase_usd if option.provider == "owned" else None,
        condition=option.condition,
        break_even=even,
        startup_hours=startup,
    )


def unpriced_line(option: Option, reference_gpu_hours: float, a: Assumptions) -> UnpricedLine:
    """Time, energy and failures of the job on an option the catalog has no price for."""
    _validate(option, reference_gpu_hours)
    compute = reference_gpu_hours / (option.speedup * option.count * option.scaling)
    failures, rework = _rework(option, compute, a)
    return UnpricedLine(
        gpu=option.gpu_id,
        count=option.count,
        provider=option.provider,
        hours=compute + (0.0 if option.condition else startup_hours(a.data_gb, a.data_copy_gbit)),
        gpu_hours=compute * option.count,
        energy_kwh=option.count * option.tdp_w * a.power_utilization / 1000 * compute,
        expected_failures=failures,
        rework_hours=rework,
        reason=option.unpriced or "no price",
        fix=option.unpriced_fix or "give a price",
        notes=list(option.notes),
        speedup=option.speedup,
        scaling_efficiency=option.scaling,
        condition=option.condition,
    )


def cost_options(
    options: list[Option], reference_gpu_hours: float, assumptions: Assumptions
) -> list[CostLine]:
    """Every option priced, cheapest effective total first."""
    for option in options:  # every option checked before any is priced
        _validate(option, reference_gpu_hours)
    lines = [cost_line(o, reference_gpu_hours, assumptions) for o in options]
    return sorted(lines, key=lambda line: line.effective_usd)


def cost_all(
    options: list[Option], reference_gpu_hours: float, assumptions: Assumptions
) -> tuple[list[CostLine], list[UnpricedLine]]:
    """The priced options, cheapest effective total first, and those without a price
    (shortest first). At least one option must have a price: a table of nothing but "no
    price" answers no question, so that is the first unpriced option's one-line error."""
    for option in options:  # every option checked before any is priced
        _validate(option, reference_gpu_hours)
    priced = [o for o in options if o.unpriced is None]
    unpriced = [o for o in options if o.unpriced is not None]
    if not priced and unpriced:
        first = unpriced[0]
        raise UserError(f"{first.label()}: {first.unpriced}.", f"{first.unpriced_fix}.")
    lines = cost_options(priced, reference_gpu_hours, assumptions)
    rest = [unpriced_line(o, reference_gpu_hours, assumptions) for o in unpriced]
    return lines, sorted(rest, key=lambda line: line.hours)


def _rework(option: Option, hours: float, a: Assumptions) -> tuple[float, float]:
    """Expected failures over the job and the hours they cost (half a checkpoint interval
    plus a restart each): priced or not, an option loses the same time to them."""
    if not a.failures:
        return 0.0, 0.0
    per_1000 = (
        a.failures_per_1000_gpu_hours_consumer
        if option.consumer
        else a.failures_per_1000_gpu_hours_datacenter
    )
    failures = per_1000 * option.count * hours / 1000
    return failures, failures * (a.checkpoint_hours / 2 + a.restart_minutes / 60)
