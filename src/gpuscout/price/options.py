"""Turning what the user asked for into priced options: GPU, count, provider, speed, scaling.

Speed relative to the reference GPU and scaling come, in this order, from ``--speedup`` /
``--scaling`` flags, from the predictor (when a workload is given), or from a spec ratio (the
GPUs' training TFLOPS, FP16/BF16 tensor with FP32 accumulate) with a stated scaling guess.
Prices come from the option itself (``=USD`` per hour for the whole option), else from the
catalog: the cheapest on-demand price (of the named provider, if any) times the count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gpuscout.catalog import Catalog, Gpu
from gpuscout.catalog.rates import training_tflops
from gpuscout.errors import UserError
from gpuscout.price.cost import Option
from gpuscout.units import fmt_sig

SCALING_GUESS_NVLINK = 0.9
SCALING_GUESS_PCIE = 0.75
_SPEC = re.compile(
    r"^(?P<gpu>[^@=]+?)(?:x(?P<count>\d+))?(?:@(?P<where>[\w.-]+))?(?:=(?P<usd>[\d.]+))?$"
)


@dataclass(frozen=True)
class OptionSpec:
    gpu: str
    count: int
    provider: str | None  # None: cheapest anywhere; "owned": bought
    usd_per_hour: float | None


def parse_option(text: str) -> OptionSpec:
    """'a100-40gbx4@lambda', '3090x4=2.00', '4090@owned' -> an option spec."""
    m = _SPEC.match(text.strip().lower())
    if m is None or not m.group("gpu").strip():
        raise UserError(
            f"option '{text}' is not GPU[xCOUNT][@PROVIDER|@owned][=USD_PER_HOUR].",
            "write e.g. a100-40gbx4@lambda or 3090x4=2.00.",
        )
    count = int(m.group("count") or 1)
    if count < 1:
        raise UserError(f"option '{text}': GPU count must be >= 1.", None)
    usd = float(m.group("usd")) if m.group("usd") else None
    if usd is not None and not usd > 0:
        raise UserError(f"option '{text}': the price must be positive.", None)
    return OptionSpec(m.group("gpu").strip(), count, m.group("where"), usd)


def parse_pairs(items: list[str], flag: str, value_name: str) -> dict[str, float]:
    """['a100-40gb=1.78'] -> {'a100-40gb': 1.78}, with a clear error for a malformed item."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or not key.strip() or not number > 0:
            raise UserError(
                f"{flag} '{item}' is not KEY={value_name} with a positive number.",
                f"write e.g. {flag} {'a100-40gb=1.78' if flag == '--speedup' else '4=0.68'}.",
            )
        out[key.strip().lower()] = number
    return out


def build_options(
    specs: list[OptionSpec],
    catalog: Catalog,
    reference: Gpu,
    speedups: dict[str, float],
    scalings: dict[str, float],
    purchases: dict[str, float],
    predicted: Callable[[Gpu, int], tuple[float, float]] | None,
) -> list[Option]:
    """Priced options; ``predicted(gpu, count)`` gives (speedup vs reference, scaling).

    Every spec is checked (GPU names, providers, the keys of ``speedups`` and ``purchases``)
    before any is priced, so a bad option is named even beside one the catalog cannot price.
    An option without a price is returned with ``unpriced`` saying why, not refused: the
    default set includes the RTX 3090, which no cloud in the catalog rents on demand.
    """
    providers = {p.provider for p in catalog.prices}
    speedups = {catalog.resolve(k).gpu.id: v for k, v in speedups.items()}
    purchases = {catalog.resolve(k).gpu.id: v for k, v in purchases.items()}
    gpus = [catalog.resolve(spec.gpu).gpu for spec in specs]
    for spec in specs:
        if spec.provider not in (None, "owned") and spec.provider not in providers:
            raise UserError(
                f"unknown provider '{spec.provider}' in option '{spec.gpu}'.",
                f"use one of: {', '.join(sorted(providers))}, or owned.",
            )
    return [
        _option(spec, gpu, catalog, reference, speedups, scalings, purchases, predicted)
        for spec, gpu in zip(specs, gpus, strict=True)
    ]


def _option(
    spec: OptionSpec,
    gpu: Gpu,
    catalog: Catalog,
    reference: Gpu,
    speedups: dict[str, float],
    scalings: dict[str, float],
    purchases: dict[str, float],
    predicted: Callable[[Gpu, int], tuple[float, float]] | None,
) -> Option:
    notes: list[str] = []
    speedup, scaling = _speed(gpu, spec.count, reference, speedups, scalings, predicted, notes)
    cheapest = _cheapest(catalog, gpu, None)
    rent = cheapest * spec.count if cheapest else None
    price = spec.usd_per_hour
    purchase = None
    unpriced: tuple[str, str] | None = None  # (why, how to give one)
    if spec.provider == "owned":
        unit = purchases.get(gpu.id) or gpu.launch_price_usd
        if unit is None:
            unpriced = (
                f"no purchase price for {gpu.id} in the catalog (its row has no launch MSRP)",
                f"give --purchase {gpu.id}=USD (per GPU)",
            )
        else:
            if gpu.id not in purchases:
                notes.append(f"purchase at launch MSRP ${unit:,.0f} per GPU (catalog)")
            purchase = unit * spec.count
    elif price is None:
        found = _cheapest(catalog, gpu, spec.provider)
        if found is None:
            unpriced = _why_unpriced(catalog, gpu, spec)
        else:
            price = found * spec.count
            notes.append(f"${found:g}/GPU-hour, cheapest on-demand price in the catalog")
    tdp_w, assumed_power = gpu.board_power_w()
    if assumed_power:
        notes.append(assumed_power)
    return Option(
        gpu_id=gpu.id,
        count=spec.count,
        speedup=speedup,
        scaling=scaling,
        tdp_w=tdp_w,
        consumer=gpu.market == "consumer",
        provider=spec.provider
        or ("cloud" if spec.usd_per_hour else _cheapest_provider(catalog, gpu) or "cloud"),
        usd_per_hour=price,
        purchase_usd=purchase,
        rent_usd_per_hour=rent,
        notes=tuple(notes),
        unpriced=unpriced[0] if unpriced else None,
        unpriced_fix=unpriced[1] if unpriced else None,
    )


def _why_unpriced(catalog: Catalog, gpu: Gpu, spec: OptionSpec) -> tuple[str, str]:
    """Why the catalog has no on-demand price for this option, and how to give one."""
    rows = catalog.prices_for(gpu.id)
    on_demand = sorted({p.provider for p in rows if p.kind == "on_demand"})
    if spec.provider and on_demand:
        why = f"no on-demand price for {gpu.id} at {spec.provider} (it has: {', '.join(on_demand)})"
    elif rows:
        kinds = ", ".join(sorted({p.kind.replace("_", " ") for p in rows}))
        why = f"no on-demand price for {gpu.id} in the catalog (only {kinds} prices)"
    else:
        where = f" at {spec.provider}" if spec.provider else ""
        why = (
            f"no on-demand price for {gpu.id}{where} in the catalog (no provider in it "
            "lists this GPU)"
        )
    return why, f"give one: --option {gpu.id}x{spec.count}=USD_PER_HOUR, or add a price file"


def _speed(
    gpu: Gpu,
    count: int,
    reference: Gpu,
    speedups: dict[str, float],
    scalings: dict[str, float],
    predicted: Callable[[Gpu, int], tuple[float, float]] | None,
    notes: list[str],
) -> tuple[float, float]:
    model = predicted(gpu, count) if predicted else None
    if gpu.id in speedups:
        speedup = speedups[gpu.id]
        notes.append(f"speed {speedup:g}x {reference.id} (given)")
    elif model is not None:
        speedup = model[0]
    else:
        speedup = training_tflops(gpu) / training_tflops(reference)
        if gpu.id != reference.id:
            notes.append(
                f"speed {fmt_sig(speedup)}x {reference.id} from training TFLOPS (spec ratio, no "
                "workload)"
            )
    key = next((k for k in (f"{gpu.id}x{count}", str(count)) if k in scalings), None)
    if count == 1:
        scaling = 1.0
    elif key is not None:
        scaling = scalings[key]
        notes.append(f"scaling {scaling:.0%} on {count} GPUs (given)")
    elif model is not None:
        scaling = model[1]
    else:
        nvlink = bool(gpu.nvlink_gb_per_s_total) and count <= (gpu.nvlink_max_gpus or 0)
        scaling = SCALING_GUESS_NVLINK if nvlink else SCALING_GUESS_PCIE
        notes.append(f"scaling {scaling:.0%} assumed ({'NVLink' if nvlink else 'PCIe'})")
    return speedup, scaling


def _cheapest(catalog: Catalog, gpu: Gpu, provider: str | None) -> float | None:
    rows = [
        p.usd_per_gpu_hour
        for p in catalog.prices_for(gpu.id)
        if p.kind == "on_demand" and p.usd_per_gpu_hour and provider in (None, p.provider)
    ]
    return min(rows) if rows else None


def _cheapest_provider(catalog: Catalog, gpu: Gpu) -> str | None:
    found = catalog.cheapest(gpu.id, "on_demand")
    return found.provider if found else None
