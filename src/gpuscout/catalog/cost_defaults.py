"""The defaults of the cost arithmetic (``price/cost.py``) as sourced data, not code.

Each default is a fact someone published (an electricity price, a measured power draw, a
depreciation schedule) or, where none was found, gpuscout's assumption, which its ``source``
cell says in so many words. ``cost``, ``advise`` and the report print every default with its
source, so a user can check it or replace it (``--usd-per-kwh``, ``--amortize-years``, ...).

The file is read once per process and validated as the catalog's files are: one line naming
the file, the line and the column for a bad cell; a missing, unknown or repeated name refused.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from gpuscout.catalog.catalog import data_dir
from gpuscout.catalog.models import Text, _Row
from gpuscout.core.errors import UserError, did_you_mean

FILE = "cost_defaults.csv"
# The names the arithmetic reads (``price.cost.Assumptions``' fields), and the reference
# figures printed beside them but not used in it.
NAMES = (
    "power_utilization",
    "usd_per_kwh",
    "amortize_years",
    "owned_utilization",
    "checkpoint_hours",
    "restart_minutes",
    "failures_per_1000_gpu_hours_consumer",
    "failures_per_1000_gpu_hours_datacenter",
    "delay_usd_per_day",
    "data_copy_gbit",
)
REFERENCE = ("eu_household_eur_per_kwh",)
# Read where rentals are laid out (``price.instances``): the network between separate instances
RENTALS = ("separate_instances_gbit",)
ASSUMPTION = "gpuscout's assumption"


class CostDefault(_Row):
    """One default: its value, unit and where it comes from."""

    name: Text
    value: Annotated[float, Field(ge=0)]
    unit: Text
    source: Text
    retrieved_on: dt.date
    notes: str | None = None

    @property
    def assumed(self) -> bool:
        """True where no source was found and the figure is gpuscout's own choice."""
        return self.source.startswith(ASSUMPTION)


@dataclass(frozen=True)
class CostDefaults:
    rows: dict[str, CostDefault]
    path: Path

    def value(self, name: str) -> float:
        return self.rows[name].value

    def source(self, name: str) -> str:
        return self.rows[name].source


def read_cost_defaults(path: Path) -> CostDefaults:
    """Every row of ``path`` validated; exactly the names in NAMES and REFERENCE, once each."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            records = [(reader.line_num, dict(r)) for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        problem = f"cannot read cost defaults '{path}': {exc}."
        raise UserError(problem, "reinstall gpuscout.") from None
    known = (*NAMES, *REFERENCE, *RENTALS)
    rows: dict[str, CostDefault] = {}
    for line, cells in records:
        try:
            row = CostDefault.model_validate(cells)
        except ValidationError as exc:
            err = exc.errors()[0]
            column = str(err["loc"][0]) if err["loc"] else "row"
            raise UserError(
                f"{path}: line {line}, column '{column}': {err['msg']} "
                f"(got '{cells.get(column, '')}').",
                "correct the cell: name, value (a number >= 0), unit, source, retrieved_on "
                "(YYYY-MM-DD), notes.",
            ) from None
        if row.name not in known:
            raise UserError(
                f"{path}: line {line}: unknown default '{row.name}'."
                + did_you_mean(row.name, known),
                f"use one of: {', '.join(known)}.",
            )
        if row.name in rows:
            raise UserError(f"{path}: line {line}: '{row.name}' is given twice.", "keep one row.")
        rows[row.name] = row
    missing = [n for n in known if n not in rows]
    if missing:
        raise UserError(f"{path}: no row for '{missing[0]}'.", "add it with its source.")
    return CostDefaults(rows, path)


@functools.cache
def cost_defaults() -> CostDefaults:
    """The shipped defaults (read once per process)."""
    return read_cost_defaults(data_dir() / FILE)
