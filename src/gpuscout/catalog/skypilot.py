"""SkyPilot catalog CSVs (``~/.sky/catalogs/v7/<cloud>/vms.csv``) as price rows.

SkyPilot prices whole instances; a price per GPU-hour is ``Price / AcceleratorCount``. The
provider is the folder the file sits in (SkyPilot's layout) unless that is not a known cloud.
SkyPilot's accelerator names are short and mean different parts at different providers ("H100"
is the SXM part on AWS but the PCIe part on RunPod); the ones that are not plain catalog names
are mapped here, per provider. A row whose spot price is above its on-demand price is skipped:
the columns are swapped in some SkyPilot snapshots, and a wrong price is worse than none.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from gpuscout.catalog.files import Table
from gpuscout.catalog.models import Price
from gpuscout.catalog.names import Resolver
from gpuscout.catalog.plausible import check_price
from gpuscout.errors import UserError

SKYPILOT_NAMES: dict[str, str] = {
    "A100": "a100-40gb-sxm",
    "A100-80GB": "a100-80gb-sxm",
    "A100-80GB-SXM": "a100-80gb-sxm",
    "V100": "v100-sxm2-16gb",
    "V100-32GB": "v100-sxm2-32gb",
    "H100": "h100-sxm",
    "H100-SXM": "h100-sxm",
    "H100-PCIe": "h100-pcie",
    "H200-SXM": "h200",
}
PROVIDER_NAMES: dict[str, dict[str, str]] = {
    "runpod": {"H100": "h100-pcie", "A100-80GB": "a100-80gb-pcie"},
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
        mapped = PROVIDER_NAMES.get(provider, {}).get(accel) or SKYPILOT_NAMES.get(accel)
        found = None if mapped else resolver.find(accel)
        gpu_id = mapped or (found.gpu.id if found else None)
        if gpu_id is None:
            out.skipped[accel] = out.skipped.get(accel, 0) + 1
            continue
        count = _number(table, line, cells, "AcceleratorCount")
        if cells.get("SpotPrice", "").strip() and _number(table, line, cells, "SpotPrice") > (
            _number(table, line, cells, "Price")
        ):
            why = f"{accel} (spot above on-demand)"
            out.skipped[why] = out.skipped.get(why, 0) + 1
            continue
        for kind, column in (("on_demand", "Price"), ("spot", "SpotPrice")):
            if not cells.get(column, "").strip():
                continue
            per_gpu = _number(table, line, cells, column) / count
            key = (gpu_id, cells["InstanceType"], cells.get("Region", ""), kind)
            if key in seen:
                continue  # one row per availability zone in SkyPilot files
            seen.add(key)
            price = Price(
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
            check_price(price, table.path, line)
            out.prices.append(price)
    return out


def _number(table: Table, line: int, cells: dict[str, str], column: str) -> float:
    text = cells.get(column, "")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 and math.isfinite(value)):  # 'inf' parses as a float
        raise UserError(
            f"{table.path}: line {line}, column '{column}': not a positive finite number "
            f"(got '{text}').",
            "correct the cell or fetch a fresh SkyPilot catalog.",
        )
    return value
