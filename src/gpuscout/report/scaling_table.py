"""The result of ``bench --scaling``: throughput per device count and scaling efficiency."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpuscout.core.records import Interval, RunResult
from gpuscout.core.text import printable
from gpuscout.core.units import fmt_percent, fmt_rate
from gpuscout.report.console import literal


def _interval(i: Interval | None) -> str:
    if i is None:
        return "-"
    if i.ci_low is None or i.ci_high is None:
        return f"{fmt_rate(i.median)} (interval undefined)"
    return f"{fmt_rate(i.median)} [{fmt_rate(i.ci_low)} - {fmt_rate(i.ci_high)}]"


def _efficiency(result: RunResult) -> str:
    spread = result.distribution
    if spread is None or spread.scaling is None:
        return "-"
    e = spread.scaling.efficiency
    if e is None:
        return "base"
    if e.ci_low is None or e.ci_high is None:
        return f"{fmt_percent(e.median)} (interval undefined)"
    return f"{fmt_percent(e.median)} [{fmt_percent(e.ci_low)} - {fmt_percent(e.ci_high)}]"


def scaling_table(results: Sequence[RunResult]) -> Table:
    first = results[0]
    table = Table(
        title=Text(printable(f"gpuscout bench --scaling · {first.workload} · {first.precision}")),
        title_justify="left",
    )
    for name in ("devices", "run", "batch per replica", "global batch"):
        table.add_column(name, justify="right" if name != "devices" else "left")
    table.add_column("samples/s [95% CI]", justify="right")
    table.add_column("per replica", justify="right")
    table.add_column("scaling efficiency [95% CI]", justify="right")
    for r in results:
        spread = r.distribution
        if r.status != "ok" or spread is None or r.samples_per_second is None:
            table.add_row(literal(r.device), str(r.id), "-", "-", f"[red]{r.status}[/]", "-", "-")
            continue
        table.add_row(
            literal(r.device),
            str(r.id),
            str(spread.per_replica_batch),
            str(spread.global_batch),
            _interval(r.samples_per_second),
            fmt_rate(r.samples_per_second.median / spread.replicas),
            _efficiency(r),
        )
    return table


def print_sweep(results: Sequence[RunResult], console: Console) -> None:
    """The sweep's table, each run's warnings, and the assumptions behind the figures."""
    console.print(scaling_table(results))
    ok = [r for r in results if r.status == "ok"]
    base = next((r for r in ok if r.distribution and r.distribution.scaling), None)
    if base is not None and base.distribution is not None:
        n = base.distribution.replicas
        console.print(
            f"scaling efficiency = samples/s(n) / (n/{n} x samples/s({n})), against run "
            f"{base.id}; its interval combines the two runs' intervals (independent runs, "
            "log scale)",
            highlight=False,
        )
    for r in results:
        for warning in r.warnings:
            console.print(f"[yellow]warning[/yellow] ({literal(r.device)}): {literal(warning)}")
    notes = sorted({a for r in ok for a in r.assumptions if not a.startswith("data parallel")})
    if notes:
        console.print("[bold]assumptions[/bold]")
        for note in notes:
            console.print(Text(printable(f"  · {note}")))
