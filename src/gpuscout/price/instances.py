"""What renting or buying n GPUs costs, from the catalog's price rows.

Renting: a provider sells GPUs in instances of a fixed size (``gpus_per_instance``), and the
per-GPU price of an 8-GPU instance is not that of a 1-GPU one (RunPod's RTX 4090: $0.34 a
GPU-hour on a 1-GPU community pod, $0.69 on its 8-GPU secure instance). So n GPUs on one
machine are priced, in this order, from:

1. the provider's instance with n GPUs (the cheapest such row);
2. else its smallest instance with more than n GPUs, all of which are paid for;
3. else n x its smallest instance's per-GPU price (n x the 1-GPU price): the catalog cannot
   tell whether an n-GPU machine rents at that rate, so this is labelled an assumption
   ("assumed: GPUs rented singly").

More GPUs than one machine holds (``predict.scaling.machines_for``: 16 H100 SXM = 2 x 8) are
that many machines, each priced as above, as the prediction runs them.

Buying new: the cheapest ``purchase_new`` row of the GPU (a price file may add them), else
its launch MSRP (``gpus.csv``); buying used: the most recently seen ``purchase_used`` row
(used prices drift down as a GPU ages, so an older row is staler, not a better offer), else
no price (the user gives one). A price the user gives (``--purchase``, ``--used-price``) wins.
The GPUs alone: no host (CPU, memory, chassis, power supply) share is modelled, and the
up-front figure says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuscout.catalog import Catalog, Gpu, Price
from gpuscout.predict.scaling import machines_for

SINGLY = "assumed: GPUs rented singly"
Condition = Literal["new", "used"]
HOST_NOTE = "GPUs only: no host share (CPU, memory, chassis, power supply) is modelled"


@dataclass(frozen=True)
class Rental:
    """n GPUs rented from one provider: the whole option's price and how it was set."""

    provider: str
    count: int  # GPUs used
    gpus_paid: int  # GPUs paid for (more than used when only a bigger instance exists)
    usd_per_hour: float  # the whole option
    how: str  # printed beside the price
    assumed: bool  # n x a smaller instance's per-GPU price: the catalog cannot tell
    seen: str = "not dated"  # when the price row was observed, and how long ago

    @property
    def usd_per_gpu_hour(self) -> float:
        """Per GPU used: what the option costs an hour over the GPUs the job runs on."""
        return self.usd_per_hour / self.count


def _on_demand(catalog: Catalog, gpu: Gpu, provider: str) -> list[Price]:
    return [
        p
        for p in catalog.prices_for(gpu.id)
        if p.kind == "on_demand" and p.usd_per_gpu_hour and p.provider == provider
    ]


def _named(p: Price) -> str:
    return f"{p.gpus_per_instance}-GPU instance" + (
        f" {p.instance_type}" if p.instance_type else ""
    )


def _machine(rows: list[Price], k: int) -> tuple[float, int, str, bool, Price]:
    """($ an hour, GPUs paid, how, assumed, the row used) for one machine of ``k`` GPUs."""

    def cheapest(size: int) -> Price:
        return min((p for p in rows if p.gpus_per_instance == size),
                   key=lambda p: p.usd_per_gpu_hour or 0.0)  # fmt: skip

    sizes = sorted({p.gpus_per_instance for p in rows})
    if k in sizes:
        p = cheapest(k)
        rate = p.usd_per_gpu_hour or 0.0
        return rate * k, k, f"{_named(p)} at ${rate:g}/GPU-h", False, p
    bigger = [s for s in sizes if s > k]
    if bigger:
        p = cheapest(bigger[0])
        rate = p.usd_per_gpu_hour or 0.0
        size = p.gpus_per_instance
        return rate * size, size, (
            f"no {k}-GPU instance; the smallest bigger one, {_named(p)} at ${rate:g}/GPU-h, "
            f"all {size} paid for"
        ), False, p  # fmt: skip
    p = cheapest(sizes[0])
    rate = p.usd_per_gpu_hour or 0.0
    if p.gpus_per_instance == 1:
        how = f"{k} x the 1-GPU price ${rate:g}/GPU-h ({SINGLY})"
    else:
        how = (
            f"{k} x the {_named(p)}'s ${rate:g}/GPU-h (assumed: a {k}-GPU machine rents at "
            "that rate)"
        )
    return rate * k, k, how, True, p


def rental(catalog: Catalog, gpu: Gpu, provider: str, count: int) -> Rental | None:
    """``count`` GPUs on demand at ``provider``, or None where it lists no price for them."""
    rows = _on_demand(catalog, gpu, provider)
    if not rows:
        return None
    machines, k = machines_for(gpu, count)
    usd, paid, how, assumed, row = _machine(rows, k)
    if machines > 1:
        how = f"{machines} machines, each {how}"
    return Rental(provider, count, paid * machines, usd * machines, how, assumed,
                  row.observed_text())  # fmt: skip


def rentals(
    catalog: Catalog, gpu: Gpu, count: int, providers: frozenset[str] | None = None
) -> list[Rental]:
    """One rental per provider that lists the GPU (of ``providers``, if given), by name."""
    names = sorted({p.provider for p in catalog.prices_for(gpu.id) if p.kind == "on_demand"})
    found = (rental(catalog, gpu, name, count) for name in names
             if providers is None or name in providers)  # fmt: skip
    return [r for r in found if r is not None]


def cheapest_rental(
    catalog: Catalog, gpu: Gpu, count: int, provider: str | None = None
) -> Rental | None:
    """The cheapest rental of ``count`` GPUs (at ``provider``, if given), or None."""
    found = rentals(catalog, gpu, count, None if provider is None else frozenset({provider}))
    return min(found, key=lambda r: r.usd_per_hour, default=None)


@dataclass(frozen=True)
class Purchase:
    """``count`` GPUs bought: the money paid up front and where the price came from."""

    usd_per_gpu: float
    count: int
    how: str  # e.g. "launch MSRP $1,599 per GPU (catalog)"
    condition: Condition = "new"

    @property
    def usd(self) -> float:
        return self.usd_per_gpu * self.count

    def describe(self) -> str:
        """'up-front $3,198 (2 x launch MSRP $1,599 per GPU (catalog); GPUs only: ...)'."""
        return f"up-front ${self.usd:,.0f} ({self.count} x {self.how}; {HOST_NOTE})"


def purchase(
    catalog: Catalog, gpu: Gpu, count: int, given: float | None = None,
    condition: Condition = "new",
) -> Purchase | None:  # fmt: skip
    """What buying ``count`` GPUs new or used costs: ``given`` per GPU (the user's), else the
    catalog's price for that condition (see the module's docstring); None if none."""
    if given is not None:
        return Purchase(given, count, f"${given:,.0f} per GPU, {condition} (yours)", condition)
    if condition == "used":
        rows = catalog.prices_for(gpu.id)
        used = [p for p in rows if p.kind == "purchase_used" and p.usd_per_gpu]
        if not used:
            return None
        p = max(used, key=lambda r: ((r.observed_on or ""), -(r.usd_per_gpu or 0.0)))
        where = f"{p.provider}, seen {p.observed_text()}; {p.source}"
        return Purchase(p.usd_per_gpu or 0.0, count,
                        f"${p.usd_per_gpu:,.0f} per GPU, used ({where})", "used")  # fmt: skip
    rows = [p for p in catalog.prices_for(gpu.id) if p.kind == "purchase_new" and p.usd_per_gpu]
    if rows:
        p = min(rows, key=lambda r: r.usd_per_gpu or 0.0)
        return Purchase(
            p.usd_per_gpu or 0.0,
            count,
            f"${p.usd_per_gpu:,.0f} per GPU (new, {p.provider}, {p.observed_text()})",
        )
    if gpu.launch_price_usd:
        return Purchase(
            gpu.launch_price_usd,
            count,
            f"launch MSRP ${gpu.launch_price_usd:,.0f} per GPU (catalog)",
        )
    return None
