"""Turning what the user asked for into priced options: GPU, count, provider, speed, scaling.

Speed relative to the reference GPU and scaling come from ``--speedup`` / ``--scaling`` flags, else
from the one prediction session every command uses (``gpuscout.predict.session``: anchored on
your stored GPU runs of the step): a workload job's speed is its step predicted on each GPU, and
the scaling of several GPUs is the fitted scaling model's (``predict/scaling.py``), the figure
``predict`` prints. A job given in GPU-hours names no step: its speed is a spec ratio (the GPUs'
training TFLOPS, FP16/BF16 tensor with FP32 accumulate) and its scaling the fitted model's on
the articles' benchmark step (ResNet-50, mixed precision, batch 256), both stated.
Owned GPUs are ``@owned`` (bought new: ``--purchase``, else the catalog's new price or launch
MSRP) or ``@used`` (bought used: ``--used-price``, else the catalog's dated ``purchase_used``
row); each is set against the cheapest rental of as many (``price/break_even.py``).
Prices come from the option itself (``=USD`` per hour for the whole option), else from the
catalog, per instance size (``price/instances.py``): the provider's instance with that many
GPUs, else its smallest bigger one (all of it paid), else n x its 1-GPU price, said to be an
assumption; the cheapest provider's unless the option names one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuscout.catalog import Catalog, Gpu
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.core import articles
from gpuscout.core.errors import UserError
from gpuscout.core.units import fmt_count, fmt_hours, fmt_rate
from gpuscout.predict.predictor import memory_needed
from gpuscout.predict.profile import FUSED_ATTENTION, Profile
from gpuscout.predict.scaling import DEFAULT_NETWORK_GBIT, constants
from gpuscout.predict.session import Session
from gpuscout.price.cost import Condition, Option
from gpuscout.price.instances import Rental, Scaling, cheapest_rental
from gpuscout.price.instances import purchase as buy
from gpuscout.price.speeds import Job, Speeds
from gpuscout.workloads.llm import LLAMA_NAMES

# the option's @word -> how its GPUs were bought
OWNED: dict[str, Condition] = {"owned": "new", "used": "used"}
_SPEC = re.compile(
    r"^(?P<gpu>[^@=]+?)(?:x(?P<count>\d+))?(?:@(?P<where>[\w.-]+))?(?:=(?P<usd>[\d.]+))?$"
)


@dataclass(frozen=True)
class OptionSpec:
    gpu: str
    count: int
    provider: str | None  # None: cheapest anywhere; "owned": bought new; "used": bought used
    usd_per_hour: float | None


def parse_option(text: str) -> OptionSpec:
    """'a100-40gbx4@lambda', '3090x4=2.00', '4090@owned', '3090@used' -> an option spec."""
    m = _SPEC.match(text.strip().lower())
    if m is None or not m.group("gpu").strip():
        raise UserError(
            f"option '{text}' is not GPU[xCOUNT][@PROVIDER|@owned|@used][=USD_PER_HOUR].",
            "write e.g. a100-40gbx4@lambda, 3090x4=2.00 or 4090@used.",
        )
    count = int(m.group("count") or 1)
    if count < 1:
        raise UserError(f"option '{text}': GPU count must be >= 1.", None)
    usd = float(m.group("usd")) if m.group("usd") else None
    if usd is not None and not usd > 0:
        raise UserError(f"option '{text}': the price must be positive.", None)
    if usd is not None and m.group("where") in OWNED:
        raise UserError(
            f"option '{text}': an owned GPU has no price per hour (it is bought).",
            "give its purchase price: --purchase GPU=USD (new) or --used-price GPU=USD (used).",
        )
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


def workload_job(
    model: Session, profile: Profile, samples: float, unit: str, reference: Gpu,
    label: str | None = None, global_batch: int | None = None,
) -> Job:  # fmt: skip
    """``samples`` of the step in ``profile``: its hours on one reference GPU, predicted.
    ``label``: the job in words (``predict.job.Job.label``), else its samples and workload;
    ``global_batch``: the samples of one optimizer step that each option's GPUs split (None:
    the profile's batch on every GPU)."""
    ref = model.option(profile, reference).samples_per_second
    hours = samples / ref / 3600
    what = label or f"{fmt_count(samples)} {unit} of {profile.workload}"
    batch = (
        f"batch {profile.batch}/GPU"
        if global_batch is None
        else f"global batch {global_batch:,}, each option's batch per GPU in its row"
    )
    text = (
        f"{what} ({profile.precision}, {batch}) = {fmt_hours(hours)} on one {reference.id} "
        f"(predicted {fmt_rate(ref)}/s at batch {profile.batch})"
    )
    return Job(hours, text, profile, unit, global_batch)


def gpu_hours_job(hours: float, reference: Gpu) -> Job:
    return Job(hours, f"{hours:,.0f} GPU-hours on one {reference.id}")


def scaling_assumption(job: Job) -> str:
    """The line ``cost`` prints for the scaling of options it did not get ``--scaling`` for."""
    on = (
        f"{job.profile.workload}'s step ({job.profile.precision}, batch {job.profile.batch} per "
        "GPU)"
        if job.profile is not None
        else f"the step of the articles' benchmark, {articles.BENCHMARK_WORKLOAD} "
        f"({articles.BENCHMARK_PRECISION}, batch {articles.BENCHMARK_BATCH} per GPU), as the "
        "job names none (--workload predicts yours; --scaling N=EFF sets it)"
    )
    return (
        "several GPUs scale as predict's fitted scaling model says (data parallel, ring "
        f"all-reduce over the option's link, as many GPUs per machine as its form factor "
        f"holds), on {on}; {constants().describe()}"
    )


def build_options(
    specs: list[OptionSpec],
    model: Session,
    reference: Gpu,
    speedups: dict[str, float],
    scalings: dict[str, float],
    purchases: dict[str, float],
    job: Job | None = None,
    used_prices: dict[str, float] | None = None,
) -> list[Option]:
    """Priced options for ``job`` (None: GPU-hours, which names no step), speed and scaling
    predicted by ``model`` where no flag gives them.

    Every spec is checked (GPU names, providers, the keys of ``speedups`` and ``purchases``)
    before any is priced, so a bad option is named even beside one the catalog cannot price.
    An option without a price is returned with ``unpriced`` saying why, not refused: the
    default set includes the RTX 3090, which no cloud in the catalog rents on demand.
    """
    catalog = model.catalog
    speeds = Speeds(model, reference, job or Job(0.0, ""))
    # rental providers only: a purchase row's seller is not somewhere to rent from
    providers = {p.provider for p in catalog.prices if p.kind in ("on_demand", "spot")}
    speedups = {catalog.resolve(k).gpu.id: v for k, v in speedups.items()}
    bought = {
        "new": {catalog.resolve(k).gpu.id: v for k, v in purchases.items()},
        "used": {catalog.resolve(k).gpu.id: v for k, v in (used_prices or {}).items()},
    }
    gpus = [catalog.resolve(spec.gpu).gpu for spec in specs]
    for spec in specs:
        if spec.provider not in (None, *OWNED) and spec.provider not in providers:
            raise UserError(
                f"unknown provider '{spec.provider}' in option '{spec.gpu}'.",
                f"use one of: {', '.join(sorted(providers))}, or owned (new) or used.",
            )
    return [
        _option(spec, gpu, catalog, speeds, speedups, scalings, bought)
        for spec, gpu in zip(specs, gpus, strict=True)
    ]


def _option(
    spec: OptionSpec,
    gpu: Gpu,
    catalog: Catalog,
    speeds: Speeds,
    speedups: dict[str, float],
    scalings: dict[str, float],
    bought: dict[str, dict[str, float]],
) -> Option:
    notes: list[str] = []
    condition = OWNED.get(spec.provider or "")

    def job_scaling(r: Rental) -> float:
        return speeds.scaling(gpu, spec.count, scalings, r.layout, r.network_gbit)

    # the rental an owned option's break-even compares with, and the one a rented option is
    # timed and priced as (a catalog price, not one given): each the cheapest way for this job
    cheapest = way = None
    if condition is not None:
        cheapest = cheapest_rental(catalog, gpu, spec.count, scaling=job_scaling)
    elif spec.usd_per_hour is None:
        way = cheapest_rental(catalog, gpu, spec.count, spec.provider, scaling=job_scaling)
    layout = way.layout if way else None
    network = way.network_gbit if way else DEFAULT_NETWORK_GBIT
    speedup, scaling, fitted = speeds.of(gpu, spec.count, speedups, scalings, notes, layout,
                                         network)  # fmt: skip
    fused = speeds.job.profile is not None and FUSED_ATTENTION in speeds.job.profile.method
    if fused and float(gpu.compute_capability) < 8.0:  # cuDNN's fused attention needs Ampere
        notes.append(f"{gpu.id} is older than Ampere: Keras runs XLA's unfused attention "
                     "there, not the fused kernel the step was traced with, so it would be "
                     "slower than predicted")  # fmt: skip
    # what renting as many GPUs costs, for break-even: per owned hour of this job's work
    rent, seen = _break_even_rental(cheapest, scaling, job_scaling)
    price = spec.usd_per_hour
    provider = spec.provider or "cloud"
    purchase = None
    # (why, how to give one): a step that does not fit, or more GPUs than the global batch
    unpriced = _too_big(speeds.job.profile, gpu) or speeds.crowded(spec.count)
    if unpriced is not None:
        pass  # a step that does not run on these GPUs is not priced, whatever its price
    elif condition is not None:
        provider = "owned"
        paid = buy(catalog, gpu, spec.count, bought[condition].get(gpu.id), condition)
        if paid is None and condition == "used":
            unpriced = (
                f"no used price for {gpu.id} in the catalog (no dated purchase_used row)",
                f"give --used-price {gpu.id}=USD (per GPU), or add a purchase_used row",
            )
        elif paid is None:
            unpriced = (
                f"no purchase price for {gpu.id} in the catalog (its row has no launch MSRP)",
                f"give --purchase {gpu.id}=USD (per GPU)",
            )
        else:
            notes.append(paid.describe())
            purchase = paid.usd
        if cheapest is None and paid is not None:
            notes.append(f"no break-even: no on-demand rental of {spec.count} x {gpu.id} in "
                         "the catalog to compare with")  # fmt: skip
    elif price is None:
        if way is None:
            unpriced = _why_unpriced(catalog, gpu, spec)
        else:
            price, provider = way.usd_per_hour, way.provider
            where = "" if spec.provider else ", the cheapest on-demand rental for this job"
            notes.append(f"{way.provider}: {way.how}{where}")
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
        provider=provider,
        usd_per_hour=price,
        purchase_usd=purchase,
        rent_usd_per_hour=rent if condition else None,
        rent_seen=seen if condition else None,
        condition=condition,
        notes=tuple(notes),
        unpriced=unpriced[0] if unpriced else None,
        unpriced_fix=unpriced[1] if unpriced else None,
        scaling_fitted=fitted,
    )


def _break_even_rental(
    rental: Rental | None, owned_scaling: float, job_scaling: Scaling
) -> tuple[float | None, tuple[str, str, str] | None]:
    """What renting costs an hour of the owned GPUs' work on this job, and (provider, how,
    seen) for the line: where the rental's GPUs are separate machines that scale worse than
    the owned ones in one, an owned hour's work takes longer rented, and costs that much
    more."""
    if rental is None:
        return None, None
    slower = owned_scaling / job_scaling(rental)
    how = rental.how
    if abs(slower - 1) > 0.01:
        how += (f"; this job scales {slower:.2f}x better on the owned machine, so an owned "
                f"hour's work rents for ${rental.usd_per_hour * slower:,.2f}")  # fmt: skip
    return rental.usd_per_hour * slower, (rental.provider, how, rental.seen)


def _too_big(profile: Profile | None, gpu: Gpu) -> tuple[str, str] | None:
    """Why the job's step cannot run on ``gpu`` (it does not fit its memory; data parallel
    holds the whole step on each GPU), and what would help; None where it fits or is unknown.
    ``advise`` leaves such options out; ``cost`` shows them unpriced, saying why."""
    if profile is None:
        return None
    need, usable = memory_needed(profile) / 1e9, gpu.memory_gb * MEMORY_HEADROOM
    if need <= usable:
        return None
    ways = ["a lower --batch-size", "a GPU with more memory"]
    if "seq_len" in profile.dims:
        ways.insert(1, "a lower --seq-len")
    if profile.workload in LLAMA_NAMES and not profile.dims.get("checkpointing"):
        ways.insert(0, "--checkpointing (gpuscout predict --json's fits_with estimates it)")
    return (
        f"does not fit: the step needs {need:.1f} GB, more than {gpu.id}'s {usable:.1f} GB usable",
        "try " + ", ".join(ways[:-1]) + f" or {ways[-1]}",
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
