"""The assumed durations of renting a cloud machine (``data/v1/cloud_overheads.csv``), each
with its source: read by ``cloud plan`` for a measuring task's time and caps, and by ``cost``
and ``advise`` for the start-up every rented option waits and pays for. One file, so the two
never disagree on how long a machine takes to be ready."""

from __future__ import annotations

import csv
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

FILE = Path(__file__).parent / "data" / "v1" / "cloud_overheads.csv"


@dataclass(frozen=True)
class Overhead:
    """An assumed figure with its unit and its reason (a row of a ``name,value,unit,source``
    file: this one, and predict's ``data/overheads.csv``)."""

    value: float
    unit: str
    source: str


def read_overheads(lines: Iterable[str]) -> dict[str, Overhead]:
    """Every row of a ``name,value,unit,source`` file by name."""
    return {r["name"]: Overhead(float(r["value"]), r["unit"], r["source"])
            for r in csv.DictReader(lines)}  # fmt: skip


@functools.cache
def cloud_overheads() -> dict[str, Overhead]:
    """Every row of the file by name (a packaging bug, not a user's, if one is missing)."""
    with open(FILE, newline="", encoding="utf-8") as f:
        return read_overheads(f)


__all__ = ["FILE", "Overhead", "cloud_overheads", "read_overheads"]
