"""``runs compare``: two runs side by side, ranked only when they are comparable."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuscout.core.comparison import Comparison
from gpuscout.core.records import RunResult
from gpuscout.core.units import fmt_percent, fmt_rate
from gpuscout.report.console import literal


def _speed(run: RunResult) -> str:
    sps = run.samples_per_second
    if sps is None:  # a failed run, or a ScoutCallback run told no batch size (steps only)
        return "not measured (steps/s only)" if run.status == "ok" else run.status
    if sps.ci_low is None or sps.ci_high is None:
        return fmt_rate(sps.median)
    return f"{fmt_rate(sps.median)} [{fmt_rate(sps.ci_low)} - {fmt_rate(sps.ci_high)}]"


def print_comparison(c: Comparison, console: Console) -> None:
    a, b = c.a, c.b
    table = Table(title=f"gpuscout runs compare {a.id} {b.id}", title_justify="left")
    table.add_column("")
    table.add_column(f"run {a.id}")
    table.add_column(f"run {b.id}")
    table.add_row("samples/s [95% CI]", _speed(a), _speed(b))
    table.add_row("workload", literal(a.workload), literal(b.workload))
    table.add_row("device", literal(a.device), literal(b.device))
    for d in c.differences:
        if d.what not in ("workload", "device"):
            mark = "[red]differs[/] " if d.blocks else ""
            table.add_row(f"{mark}{d.what}", literal(d.a), literal(d.b))
    console.print(table)
    for run in (a, b):  # a result's warnings travel with it, as ``runs show`` lists them
        for warning in run.warnings:
            console.print(f"[yellow]warning[/yellow] (run {run.id}): {literal(warning)}")
    if not c.comparable:
        blocking = ", ".join(d.what for d in c.differences if d.blocks)
        console.print(
            f"not comparable: they differ in {blocking}, so one is not ranked above the other. "
            "Measure both with the same settings and software.",
            highlight=False,
        )
    elif c.speedup is not None:
        s = c.speedup
        ci = (
            f" [95% CI {s.ci_low:.2f}x - {s.ci_high:.2f}x]"
            if s.ci_low is not None and s.ci_high is not None
            else " (interval undefined)"
        )
        faster = "faster" if s.median >= 1 else "slower"
        console.print(
            f"run {b.id} is {s.median:.2f}x run {a.id}{ci}: "
            f"{fmt_percent(abs(s.median - 1))} {faster}",
            highlight=False,
        )
        if c.across_backends:
            console.print(
                f"backends compared: {b.backend} (run {b.id}) against {a.backend} (run {a.id}), "
                "the same workload, precision and batch; each backend's own framework, CUDA "
                "libraries and compiler go with it",
                highlight=False,
            )
    elif c.out_of_range:
        console.print(
            f"comparable, but the speed of run {b.id} over run {a.id} is no finite number "
            "(one of their stored speeds is wrong: see gpuscout runs show); not ranked.",
            highlight=False,
        )
    else:
        console.print("comparable, but one of them has no measured speed.", highlight=False)
