"""The latency table of ``bench --mode inference`` and its best operating point.

A figure the requests cannot support is printed as not shown, never as a guess or a bare "no":
p99.9 needs about a thousand requests, a percentile's interval needs enough requests beyond it,
and "meets the SLO" means its p99's upper bound is under the target.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpuscout.core.records import RunResult
from gpuscout.core.text import printable
from gpuscout.core.units import fmt_rate, fmt_seconds
from gpuscout.report.latency_cells import latency_cell, slo_cell


def latency_table(result: RunResult) -> Table:
    inf = result.inference
    assert inf is not None
    title = (
        f"gpuscout bench --mode inference · {result.workload} · {result.device} · "
        f"{result.precision}" + (" · XLA" if result.xla else "")
    )
    table = Table(title=Text(printable(title)), title_justify="left")
    paths = len({p.path for p in inf.points}) > 1
    names = [*(["serving"] if paths else []), "batch", "clients", "requests", "p50", "p90",
             "p99 [95% CI]", "p99.9", "samples/s", "requests/s"]  # fmt: skip
    if inf.slo_s is not None:
        names.append(f"p99 < {fmt_seconds(inf.slo_s)}")
    for name in names:
        table.add_column(name, justify="left" if name == "serving" else "right")
    for i, p in enumerate(inf.points):
        slo = [slo_cell(p, inf.slo_s)] if inf.slo_s is not None else []
        row = [*([p.path] if paths else []), str(p.batch_size), str(p.concurrency),
               f"{p.requests:,}", latency_cell(p.p50_s), latency_cell(p.p90_s),
               latency_cell(p.p99_s, True), latency_cell(p.p999_s),
               fmt_rate(p.samples_per_second), fmt_rate(p.requests_per_second), *slo]  # fmt: skip
        table.add_row(*row, style="bold" if i == inf.best else None)
    return table


def best_lines(result: RunResult) -> list[str]:
    """The operating point the SLO allows, and the devices a rate needs there."""
    inf = result.inference
    if inf is None or inf.slo_s is None:
        return []
    if inf.best is None:
        return [f"no point is shown to keep p99 under {fmt_seconds(inf.slo_s)}"]
    p = inf.points[inf.best]
    lines = [
        f"best operating point under p99 {fmt_seconds(inf.slo_s)}: batch {p.batch_size}, "
        f"{p.concurrency} client(s), {p.path}: {fmt_rate(p.samples_per_second)} samples/s, "
        f"p99 {latency_cell(p.p99_s, True)}"
    ]
    if inf.rate is not None and inf.devices_needed is not None:
        lines.append(
            f"{fmt_rate(inf.rate)} samples/s needs {inf.devices_needed} device(s) like this one "
            "at that point"
        )
    return lines


def print_latency(result: RunResult, console: Console) -> None:
    console.print(latency_table(result))
    for line in best_lines(result):
        console.print(Text(line, style="bold"))
