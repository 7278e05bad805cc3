"""The catalog as plain data for ``specs``: filtering, and each GPU with its derived figures.

Kept apart from rendering so ``--json`` and the terminal table show the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpuscout.catalog.catalog import DATA_VERSION, Catalog
from gpuscout.catalog.models import FEATURES, Gpu
from gpuscout.catalog.rates import ridge_points, training_tflops
from gpuscout.core.errors import UserError, did_you_mean

SCHEMA_VERSION = 1
DENSE_NOTE = (
    "tensor rates are dense (2:4-sparse headlines are 2x); FP16/BF16 rates are with FP32 "
    "accumulate, what mixed-precision training uses"
)


def select(
    catalog: Catalog,
    min_memory_gb: float | None = None,
    architecture: str | None = None,
    features: Iterable[str] = (),
    market: str | None = None,
) -> list[Gpu]:
    """GPUs that pass every filter, in catalog order."""
    gpus = list(catalog.gpus.values())
    if architecture:
        archs = sorted({g.architecture for g in gpus})
        wanted = architecture.lower()
        if not any(wanted in a.lower() for a in archs):
            raise UserError(
                f"no architecture matches '{architecture}'.{did_you_mean(architecture, archs)}",
                f"use one of: {', '.join(archs)}.",
            )
        gpus = [g for g in gpus if wanted in g.architecture.lower()]
    for feature in features:
        if feature not in FEATURES:
            raise UserError(
                f"unknown feature '{feature}'.{did_you_mean(feature, FEATURES)}",
                f"use one of: {', '.join(FEATURES)}.",
            )
        gpus = [g for g in gpus if g.has(feature)]
    if min_memory_gb is not None:
        gpus = [g for g in gpus if g.memory_gb >= min_memory_gb]
    if market:
        gpus = [g for g in gpus if g.market == market]
    return gpus


# Sort keys for the list: the most capable (or cheapest, or most frugal) first; unknown last.
SORT_KEYS: dict[str, tuple[Callable[[Gpu], float | None], bool]] = {
    "memory": (lambda g: g.memory_gb, True),
    "bandwidth": (lambda g: g.memory_bandwidth_gb_per_s, True),
    "fp32": (lambda g: g.fp32_tflops, True),
    "training": (training_tflops, True),
    "tdp": (lambda g: g.tdp_w, False),
    "price": (lambda g: g.launch_price_usd, False),
}


def sort_gpus(gpus: list[Gpu], key: str) -> list[Gpu]:
    """GPUs ordered by one figure; those without it (unknown price) go last."""
    get, descending = SORT_KEYS[key]
    known = [g for g in gpus if get(g) is not None]
    rest = [g for g in gpus if get(g) is None]
    return sorted(known, key=lambda g: float(get(g) or 0), reverse=descending) + rest


def derived(gpu: Gpu, catalog: Catalog) -> dict[str, Any]:
    """Figures computed from the catalog's own numbers (never stored, so never stale)."""
    train = training_tflops(gpu)
    out: dict[str, Any] = {
        "ridge_flop_per_byte": ridge_points(gpu),
        "training_tflops": train,
        "training_tflops_per_watt": round(train / gpu.tdp_w, 3) if gpu.tdp_w else None,
        "training_tflops_per_1000_usd_launch": (
            round(train / gpu.launch_price_usd * 1000, 1) if gpu.launch_price_usd else None
        ),
    }
    cheapest = catalog.cheapest(gpu.id, "on_demand")
    if cheapest is not None and cheapest.usd_per_gpu_hour:
        out["training_tflops_per_usd_hour"] = round(train / cheapest.usd_per_gpu_hour, 1)
    return out


def gpu_view(gpu: Gpu, catalog: Catalog) -> dict[str, Any]:
    """One GPU for JSON: every catalog field, where the row came from, derived figures, prices."""
    data = gpu.model_dump(mode="json")
    data["catalog_origin"] = catalog.origin.get(gpu.id)
    data["derived"] = derived(gpu, catalog)
    data["prices"] = [p.model_dump(mode="json") for p in catalog.prices_for(gpu.id)]
    return data


def specs_json(gpus: list[Gpu], catalog: Catalog, assumptions: list[str]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "catalog": {"data_version": DATA_VERSION, "user_files": catalog.files},
        "notes": [DENSE_NOTE],
        "assumptions": assumptions,
        "gpus": [gpu_view(g, catalog) for g in gpus],
    }
