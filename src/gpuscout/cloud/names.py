"""SkyPilot's accelerator names for catalog GPUs, and the other way round; the plan's defaults.

Reading a SkyPilot catalog (``catalog/skypilot.py``) maps SkyPilot's short names ("H100",
"RTX4090") to catalog ids; a task must go the other way. Rather than keep a second table that
could drift from the first, the names SkyPilot uses are listed with their sources in
``data/skypilot_names.csv`` (in order of preference) and each is given its meaning by that same
forward mapping: so "H100" is whatever reading a SkyPilot catalog takes it to be. A GPU none of
those names reaches has no SkyPilot name, and a task for it is refused rather than guessed.

Some names mean another part at one provider ("H100" is the PCIe card on RunPod): a GPU only a
provider's name reaches is asked for with that provider pinned, and a name whose meaning
differs somewhere comes with a note saying where.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from gpuscout.catalog import Catalog
from gpuscout.catalog.cloud_overheads import cloud_overheads
from gpuscout.catalog.skypilot import PROVIDER_NAMES, SKYPILOT_NAMES

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class SkyName:
    """How a task asks SkyPilot for one catalog GPU."""

    name: str  # SkyPilot's accelerator name, e.g. "H100"
    cloud: str | None = None  # pinned where only this provider's name means the GPU
    note: str | None = None  # where the same name means another GPU

    def accelerators(self, count: int) -> str:
        """The task's ``resources.accelerators`` value: "H100:8"."""
        return f"{self.name}:{count}"


@functools.cache
def skypilot_names() -> tuple[str, ...]:
    """SkyPilot's accelerator names gpuscout knows, in order of preference."""
    with open(DATA / "skypilot_names.csv", newline="", encoding="utf-8") as f:
        return tuple(row["skypilot_name"].strip() for row in csv.DictReader(f))


def catalog_id(name: str, catalog: Catalog, cloud: str | None = None) -> str | None:
    """The catalog GPU a SkyPilot accelerator name means (at ``cloud``, if given), or None:
    the same rule as reading a SkyPilot catalog (``read_skypilot``)."""
    mapped = PROVIDER_NAMES.get((cloud or "").lower(), {}).get(name) or SKYPILOT_NAMES.get(name)
    if mapped:
        return mapped
    found = catalog.resolver.find(name)
    return found.gpu.id if found else None


def sky_name(gpu_id: str, catalog: Catalog) -> SkyName | None:
    """How to ask SkyPilot for ``gpu_id``, or None where no known name means it."""
    for name in skypilot_names():
        if catalog_id(name, catalog) == gpu_id:
            elsewhere = [
                f"{p}'s {name} is {names[name]}"
                for p, names in sorted(PROVIDER_NAMES.items())
                if names.get(name, gpu_id) != gpu_id
            ]
            note = None
            if elsewhere:
                note = (
                    f"{'; '.join(elsewhere)}: the task may land there; pin 'cloud:' under "
                    f"resources to measure {gpu_id} only"
                )
            return SkyName(name, note=note)
    for provider, names in sorted(PROVIDER_NAMES.items()):
        for name, mapped in names.items():
            if mapped == gpu_id:
                return SkyName(name, cloud=provider)
    return None


@dataclass(frozen=True)
class Overheads:
    """The plan's assumed durations and chosen caps, each with its source (``overheads.csv``)."""

    startup_s: float
    install_s: float
    warmup_s: float
    cap_factor: float
    idle_minutes: int
    sources: dict[str, str]


@functools.cache
def overheads() -> Overheads:
    """The defaults a plan's time and cost rest on, read from the catalog's
    ``cloud_overheads.csv`` (also what ``cost`` and ``advise`` count as a rental's start-up)."""
    rows = cloud_overheads()
    value = {name: row.value for name, row in rows.items()}
    return Overheads(
        startup_s=value["startup_s"],
        install_s=value["install_s"],
        warmup_s=value["warmup_s"],
        cap_factor=value["cap_factor"],
        idle_minutes=round(value["idle_minutes"]),
        sources={name: row.source for name, row in rows.items()},
    )


__all__ = ["Overheads", "SkyName", "catalog_id", "overheads", "sky_name", "skypilot_names"]
