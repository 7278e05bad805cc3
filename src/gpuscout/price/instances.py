"""What renting or buying n GPUs costs, from the catalog's price rows.

Renting: a provider sells GPUs in instances of a fixed size (``gpus_per_instance``), and the
per-GPU price of an 8-GPU instance is not that of a 1-GPU one (RunPod's RTX 4090: $0.34 a
GPU-hour on a 1-GPU community pod, $0.69 on its 8-GPU secure instance). So n GPUs can be
rented, at one provider, in each of these ways (:func:`rental_ways`), all of which are kept:

1. one instance with n GPUs (the cheapest such row): one machine;
2. n / k instances of k GPUs, for each size k that divides n: that many machines, which talk
   over the network, not NVLink or PCIe, and are timed so (between instances smaller than a
   whole machine at the ``separate_instances_gbit`` of ``cost_defaults.csv``, sourced;
   between whole machines at ``predict.scaling``'s default network);
3. its smallest instance with more than n GPUs, all of which are paid for: one machine;
4. only where none of these exists, n x its smallest instance's per-GPU price on as few
   machines as the form factor allows: the catalog cannot tell whether such a machine rents
   at that rate, so this is labelled an assumption ("assumed: ...").

Which way is cheapest depends on the job, not only on the hourly price (two single 4090s cost
$0.68 an hour where RunPod's 8-GPU instance costs $5.52, but they talk over a network):
:func:`cheapest_rental` takes the job's scaling on each way's layout, where the caller has
one, and otherwise compares hourly prices. ``cost``, ``advise`` and the break-even line all
use it, so the rental a table shows is the one every comparison uses.

Buying new: the cheapest dated ``purchase_new`` row of the GPU (a street price: RTX 5090 at
$3,059 from partners where its $1,999 Founders Edition is rarely in stock), else its launch
MSRP (``gpus.csv``), said as such with its launch date, not as a price seen. A launch MSRP
below the card's own dated used price is no price a buyer finds new (the RTX 4090: $1,599 at
launch in 2022, $2,000 used in 2026, as it is no longer made): ``advise`` does not offer it
new then (:func:`not_sold_new` says why), and ``cost``, asked for it, prices it so with that
said. Buying used: the most recently seen
``purchase_used`` row
(used prices drift down as a GPU ages, so an older row is staler, not a better offer), else
no price (the user gives one). A price the user gives (``--purchase``, ``--used-price``) wins.
The GPUs alone: no host (CPU, memory, chassis, power supply) share is modelled, and the
up-front figure says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpuscout.catalog import Catalog, Gpu, Price
from gpuscout.catalog.cost_defaults import cost_defaults
from gpuscout.predict.scaling import DEFAULT_NETWORK_GBIT, machines_for, max_per_machine

ASSUMED_RATE = "assumed: a machine of that many rents at that rate"
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
    machines: int = 1  # the machines the GPUs are in (several instances: several machines)
    network_gbit: float = DEFAULT_NETWORK_GBIT  # between those machines, where several

    @property
    def usd_per_gpu_hour(self) -> float:
        """Per GPU used: what the option costs an hour over the GPUs the job runs on."""
        return self.usd_per_hour / self.count

    @property
    def layout(self) -> tuple[int, int]:
        """(machines, GPUs per machine), as the prediction times them."""
        return self.machines, self.count // self.machines


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


def separate_instances_gbit() -> float:
    """The network assumed between GPU instances smaller than a whole machine (sourced in
    ``cost_defaults.csv``): a single flow between two cloud VMs, not a cluster fabric."""
    return float(cost_defaults().value("separate_instances_gbit"))


def _ways(rows: list[Price], gpu: Gpu, count: int) -> list[Rental]:
    """Every way one provider's rows rent ``count`` GPUs (the module's docstring)."""

    def way(p: Price, usd: float, paid: int, how: str, machines: int = 1,
            net: float = DEFAULT_NETWORK_GBIT, assumed: bool = False) -> Rental:  # fmt: skip
        return Rental(p.provider, count, paid, usd, how, assumed, p.observed_text(), machines,
                      net)  # fmt: skip

    most, _ = max_per_machine(gpu)
    out = []
    bigger: list[Price] = []
    for p in rows:
        rate = p.usd_per_gpu_hour or 0.0
        low, high = p.gpus_per_instance, p.max_gpus_per_instance or p.gpus_per_instance
        if low > count:
            bigger.append(p)
        elif count <= high:  # one instance of exactly count
            kind = f"one {count}-GPU instance {p.instance_type or ''}".strip()
            how = (f"{_named(p)} at ${rate:g}/GPU-h" if low == high else
                   f"{kind} (sold with any {low}-{high} GPUs at ${rate:g}/GPU-h)")  # fmt: skip
            out.append(way(p, rate * count, count, how))
        else:  # several instances: the biggest size that divides the count
            size = next((k for k in range(high, low - 1, -1) if count % k == 0), None)
            if size is None:
                continue
            n = count // size
            whole = low == high and size >= most  # a cluster's nodes, or separate VMs / pods
            net = DEFAULT_NETWORK_GBIT if whole else separate_instances_gbit()
            why = "assumed" if whole else "separate_instances_gbit, cost_defaults.csv"
            kind = _named(p) if low == high else f"{size}-GPU instance {p.instance_type or ''}"
            out.append(way(p, rate * count, count, (
                f"{n} x {kind.strip()} at ${rate:g}/GPU-h: {n} machines, talking over a "
                f"{net:g} Gb/s network ({why}), not NVLink or PCIe"
            ), n, net))  # fmt: skip
    if bigger:
        p = min(bigger, key=lambda r: (r.gpus_per_instance, r.usd_per_gpu_hour or 0.0))
        rate, size = p.usd_per_gpu_hour or 0.0, p.gpus_per_instance
        out.append(way(p, rate * size, size, (
            f"no {count}-GPU instance; the smallest bigger one, {_named(p)} at "
            f"${rate:g}/GPU-h, all {size} paid for"
        )))  # fmt: skip
    if not out:  # no size divides the count and none is bigger: an assumption
        p = min(rows, key=lambda r: (r.gpus_per_instance, r.usd_per_gpu_hour or 0.0))
        rate = p.usd_per_gpu_hour or 0.0
        machines, k = machines_for(gpu, count)
        where = f"{machines} machines of {k}" if machines > 1 else f"one {count}-GPU machine"
        out.append(way(p, rate * count, count, (
            f"{count} x the {_named(p)}'s ${rate:g}/GPU-h, as {where} ({ASSUMED_RATE})"
        ), machines, DEFAULT_NETWORK_GBIT, assumed=True))  # fmt: skip
    return out


def rental_ways(
    catalog: Catalog, gpu: Gpu, count: int, providers: frozenset[str] | None = None
) -> list[Rental]:
    """Every way each provider (of ``providers``, if given) rents ``count`` on demand."""
    names = sorted({p.provider for p in catalog.prices_for(gpu.id) if p.kind == "on_demand"})
    out = []
    for name in names:
        if providers is None or name in providers:
            ways = _ways(_on_demand(catalog, gpu, name), gpu, count)
            out += [w for w in ways if not any(_better(o, w) for o in ways)]
    return out


def _better(a: Rental, b: Rental) -> bool:
    """``a`` is no dearer than ``b`` on no more machines, and better in one (one machine's
    8-GPU instance for one GPU is never the way, where a 1-GPU instance exists)."""
    return (a.usd_per_hour <= b.usd_per_hour and a.machines <= b.machines
            and (a.usd_per_hour, a.machines) != (b.usd_per_hour, b.machines))  # fmt: skip


# The job's scaling on a rental's layout and network (1.0 on one GPU): the caller's
# prediction, so the cheapest way is the cheapest for the job, not per hour
Scaling = Callable[[Rental], float]


def cheapest_rental(
    catalog: Catalog, gpu: Gpu, count: int, provider: str | None = None,
    scaling: Scaling | None = None, one_machine: bool = False,
) -> Rental | None:  # fmt: skip
    """The cheapest way to rent ``count`` (at ``provider``, if given; in one machine, if
    ``one_machine``): the lowest price per unit of the job's work where ``scaling`` gives the
    job's scaling on each way, else the lowest hourly price; on a tie, fewer machines. None
    where nobody rents it."""
    found = rental_ways(catalog, gpu, count, None if provider is None else frozenset({provider}))
    found = [r for r in found if r.machines == 1 or not one_machine]

    def per_work(r: Rental) -> tuple[float, int]:
        return r.usd_per_hour / (scaling(r) if scaling else 1.0), r.machines

    return min(found, key=per_work, default=None)


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
            f"${p.usd_per_gpu:,.0f} per GPU, new ({p.provider}, seen {p.observed_text()}; "
            f"{p.source})",
        )
    if gpu.launch_price_usd:
        launched = f", launched {gpu.launch_date}" if gpu.launch_date else ""
        above = _used_above_msrp(catalog, gpu)
        return Purchase(
            gpu.launch_price_usd,
            count,
            f"launch MSRP ${gpu.launch_price_usd:,.0f} per GPU (catalog{launched}; not a dated "
            "street price" + (f"; {_below_used(gpu, above)}" if above else "") + ")",
        )
    return None


def not_sold_new(catalog: Catalog, gpu: Gpu) -> str | None:
    """Why ``gpu`` has no new price where its only one would be a launch MSRP below its own
    dated used price (a card no longer made sells used above its list price); None
    otherwise."""
    used = _used_above_msrp(catalog, gpu)
    return None if used is None else f"{gpu.id} is not offered new: {_below_used(gpu, used)}"


def _used_above_msrp(catalog: Catalog, gpu: Gpu) -> float | None:
    """The dated used price of a GPU without a street price new, where it is above the launch
    MSRP (else None)."""
    if any(p.kind == "purchase_new" and p.usd_per_gpu for p in catalog.prices_for(gpu.id)):
        return None
    used = purchase(catalog, gpu, 1, condition="used")
    if gpu.launch_price_usd is None or used is None or used.usd <= gpu.launch_price_usd:
        return None
    return used.usd


def _below_used(gpu: Gpu, used_usd: float) -> str:
    return (
        f"its launch MSRP (${gpu.launch_price_usd or 0:,.0f}) is below what it sells for used "
        f"(${used_usd:,.0f}), so a new one at that price is not to be found; priced used"
    )
