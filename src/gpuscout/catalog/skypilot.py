"""SkyPilot catalog CSVs (``~/.sky/catalogs/v7/<cloud>/vms.csv``) as price rows.

SkyPilot prices whole instances; a price per GPU-hour is ``Price / AcceleratorCount``. The
provider is the folder the file sits in (SkyPilot's layout) unless that is not a known cloud.
SkyPilot's accelerator names are short and mean different parts at different providers ("H100"
is the SXM part on AWS but the PCIe part on RunPod); the ones that are not plain catalog names
are mapped here, per provider. A row whose spot price is above its on-demand price is skipped:
the columns are swapped in some SkyPilot snapshots, and a wrong price is worse than none.

A SkyPilot file is a user's file, held to the rules of the others (issue 31): its prices are
dated by the file's modification time (the file has no date column), which may not be in the
future; and a row is one instance type with its accelerators in one region and zone, so two
rows with that same key and different prices contradict each other and are refused naming both
lines. Rows that repeat one another exactly are SkyPilot's layout (a row per zone, where the
file has no zone column) and are read once.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from gpuscout.catalog.files import CLOCK_SKEW, Table
from gpuscout.catalog.models import Price
from gpuscout.catalog.names import Resolver
from gpuscout.catalog.plausible import check_price
from gpuscout.core.errors import UserError

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
    retrieved = _file_date(table)
    seen: set[tuple[str, str, str, str]] = set()
    rows: dict[tuple[str, ...], tuple[int, tuple[float | str, ...]]] = {}  # key -> line, prices
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
        _check_repeat(table, line, cells, rows)
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


def _file_date(table: Table, today: dt.date | None = None) -> dt.date:
    """The date the file's prices were seen: its modification time, refused in the future (a
    day of clock skew allowed, as for dated rows), where it would make every price the newest."""
    seen = dt.date.fromtimestamp(table.path.stat().st_mtime)
    today = today or dt.date.today()
    if seen > today + CLOCK_SKEW:
        raise UserError(
            f"{table.path}: the file was modified on {seen.isoformat()}, in the future (today is "
            f"{today.isoformat()}); a SkyPilot catalog's prices are dated by that time.",
            f"check this computer's clock, or give the file today's time (touch {table.path}).",
        )
    return seen


_KEY = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "AvailabilityZone")
_PRICES = ("Price", "SpotPrice")


def _check_repeat(
    table: Table,
    line: int,
    cells: dict[str, str],
    rows: dict[tuple[str, ...], tuple[int, tuple[float | str, ...]]],
) -> None:
    """Refuse a row that gives the same instance in the same region and zone as an earlier
    one at other prices: which price counts would be an accident of order."""
    key = tuple(cells.get(column, "").strip() for column in _KEY)
    prices = tuple(_as_number(cells.get(column, "")) for column in _PRICES)
    first = rows.setdefault(key, (line, prices))
    if first[1] != prices:
        where = ", ".join(f"{c} {v}" for c, v in zip(_KEY, key, strict=True) if v)
        raise UserError(
            f"{table.path}: lines {first[0]} and {line} both give {where}, at different prices.",
            "keep one of the two rows, or fetch a fresh SkyPilot catalog.",
        )


def _as_number(text: str) -> float | str:
    """A price cell as a number where it is one, so "0.69" and "0.690" are one price."""
    try:
        return float(text)
    except ValueError:
        return text.strip()


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
