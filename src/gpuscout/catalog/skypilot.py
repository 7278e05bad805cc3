"""SkyPilot catalog CSVs (``~/.sky/catalogs/v7/<cloud>/vms.csv``) as price rows.

SkyPilot prices whole instances; a price per GPU-hour is ``Price / AcceleratorCount``. The
provider is the folder the file sits in (SkyPilot's layout) unless that is not a known cloud.
SkyPilot's accelerator names are short ("A100" is the 40 GB SXM4 part, "V100" the 16 GB SXM2
part); the few that are not forgiving catalog names are mapped here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from gpuscout.catalog.files import Table
from gpuscout.catalog.models import Price
from gpuscout.catalog.names import Resolver
from gpuscout.errors import UserError

SKYPILOT_NAMES = {
    "A100": "a100-40gb-sxm",
    "A100-80GB": "a100-80gb-sxm",
    "A100-80GB-SXM": "a100-80gb-sxm",
    "V100": "v100-sxm2-16gb",
    "V100-32GB": "v100-sxm2-32gb",
    "H100-SXM": "h100-sxm",
    "H100-PCIe": "h100-pcie",
}


@dataclass
class SkyPilotPrices:
    prices: list[Price] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # accelerator name -> rows skipped


def read_skypilot(table: Table, resolver: Resolver) -> SkyPilotPrices:
    """Price rows from a SkyPilot catalog; rows for accelerators not in the catalog are counted."""
    out = SkyPilotPrices()
    provider = table.path.parent.name.lower() or table.path.stem.lower()
    retrieved = dt.date.fromtimestamp(table.path.stat().st_mtime)
    seen: set[tuple[str, str, str, str]] = set()
    for line, cells in table.rows:
        accel = cells.get("AcceleratorName", "").strip()
        if not accel:
            continue  # CPU-only instance
        mapped = SKYPILOT_NAMES.get(accel)
        found = None if mapped else resolver.find(accel)
        gpu_id = mapped or (found.gpu.id if found else None)
        if gpu_id is None:
            out.skipped[accel] = out.skipped.get(accel, 0) + 1
            continue
        count = _number(table, line, cells, "AcceleratorCount")
        for kind, column in (("on_demand", "Price"), ("spot", "SpotPrice")):
            if not cells.get(column, "").strip():
                continue
            per_gpu = _number(table, line, cells, column) / count
            key = (gpu_id, cells["InstanceType"], cells.get("Region", ""), kind)
            if key in seen:
                continue  # one row per availability zone in SkyPilot files
            seen.add(key)
            out.prices.append(
                Price(
                    gpu_id=gpu_id,
                    provider=provider,
                    kind=kind,  # type: ignore[arg-type]
                    instance_type=cells["InstanceType"],
                    gpus_per_instance=max(1, round(count)),
                    region=cells.get("Region") or None,
                    usd_per_gpu_hour=round(per_gpu, 4),
                    observed_on=None,
                    notes=f"SkyPilot name {accel}; {cells[column]} USD/h per instance",
                    source=f"SkyPilot catalog {table.path}",
                    retrieved_on=retrieved,
                )
            )
    return out


def _number(table: Table, line: int, cells: dict[str, str], column: str) -> float:
    text = cells.get(column, "")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UserError(
            f"{table.path}: line {line}, column '{column}': not a positive number (got '{text}').",
            "correct the cell or fetch a fresh SkyPilot catalog.",
        )
    return value
