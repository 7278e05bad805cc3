"""A report over many runs: the newest in detail, every one in an aggregate table.

A team store grows to thousands of runs. Loading each one whole (its result, step times and
monitor timeline) to draw a ranking bar and an environment table per run took minutes and
gigabytes at 10,000 runs, and gave a page nobody can read. Beyond :data:`DETAIL_LIMIT` runs the
report therefore shows the newest ones run by run and summarises all of them per workload,
device and precision, from the store's list columns only (no JSON, no step times), so memory
and time grow with the number of groups, not with the runs' contents.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuscout.core.records import on_backend

if TYPE_CHECKING:  # the store pulls in SQLAlchemy: import it only for type checking
    from gpuscout.store import RunRow

DETAIL_LIMIT = 200  # runs shown one by one; the rest are in the aggregate table only


@dataclass(frozen=True)
class Aggregate:
    """The runs of one workload on one device at one precision."""

    workload: str
    device: str
    precision: str
    runs: int  # every run of the group, failed ones included
    measured: int  # ok runs with a samples/s figure: the median and best are theirs
    median: float | None
    best: float | None
    best_run: int | None


@dataclass(frozen=True)
class Summary:
    """What the report says about runs it does not show one by one."""

    total: int  # runs the report covers
    detailed: int  # the newest of them, shown run by run
    aggregates: list[Aggregate]


def aggregate(rows: Iterable[RunRow]) -> list[Aggregate]:
    """Per (workload, device, precision and backend): how many runs, and the median and best
    samples/s of the successful ones; by workload, then the fastest median first."""
    groups: dict[tuple[str, str, str], tuple[list[int], list[float], list[int]]] = {}
    for row in rows:
        workload = row.workload + (" (inference)" if row.mode == "inference" else "")
        precision = row.precision + (" +XLA" if row.xla else "")
        precision += on_backend(row.backend)  # a backend is its own group
        ids, rates, rate_ids = groups.setdefault((workload, row.device, precision), ([], [], []))
        ids.append(row.id)
        if row.status == "ok" and row.samples_per_second:
            rates.append(row.samples_per_second)
            rate_ids.append(row.id)
    out = []
    for (workload, device, precision), (ids, rates, rate_ids) in groups.items():
        best = max(range(len(rates)), key=rates.__getitem__) if rates else None
        out.append(
            Aggregate(
                workload=workload,
                device=device,
                precision=precision,
                runs=len(ids),
                measured=len(rates),
                median=statistics.median(rates) if rates else None,
                best=rates[best] if best is not None else None,
                best_run=rate_ids[best] if best is not None else None,
            )
        )
    out.sort(key=lambda a: (a.workload, -(a.median or 0.0), a.device, a.precision))
    return out
