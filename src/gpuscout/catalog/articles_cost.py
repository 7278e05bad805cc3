"""The articles' cost table (article 001, see :mod:`gpuscout.core.articles`) as shipped data.

Each row is one option of the table: its price per hour for the whole option, the speed and
scaling the article itself gives elsewhere, and the hours and total it claims. ``gpuscout
cost --example articles`` prices the options with the article's own speed and scaling and
sets its claims beside the result, which is how the table's inconsistencies show.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

from gpuscout.catalog.catalog import data_dir

FILE = "articles_cost.csv"


@dataclass(frozen=True)
class ArticleCostRow:
    gpu_id: str
    count: int
    usd_per_hour: float  # the whole option
    speedup_vs_reference: float  # one GPU against the reference GPU (an RTX 3090)
    scaling_efficiency: float  # of ``count`` GPUs, 1.0 = linear
    claimed_hours: float
    claimed_total_usd: float
    notes: str
    source: str
    retrieved_on: str

    def option(self) -> str:
        """The row as a ``--option`` spec: GPUxCOUNT=USD_PER_HOUR."""
        return f"{self.gpu_id}x{self.count}={self.usd_per_hour:g}"


@functools.cache
def articles_cost() -> tuple[ArticleCostRow, ...]:
    """The rows of ``articles_cost.csv``, in the article's order."""
    with (data_dir() / FILE).open(newline="", encoding="utf-8") as f:
        return tuple(
            ArticleCostRow(
                gpu_id=row["gpu_id"],
                count=int(row["count"]),
                usd_per_hour=float(row["usd_per_hour"]),
                speedup_vs_reference=float(row["speedup_vs_reference"]),
                scaling_efficiency=float(row["scaling_efficiency"]),
                claimed_hours=float(row["claimed_hours"]),
                claimed_total_usd=float(row["claimed_total_usd"]),
                notes=row["notes"],
                source=row["source"],
                retrieved_on=row["retrieved_on"],
            )
            for row in csv.DictReader(f)
        )
