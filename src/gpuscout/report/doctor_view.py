"""``doctor``'s report in the terminal: the verdict, the fixes ranked, and the code for each."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuscout.core.articles import PIPELINE_STARVED_BELOW
from gpuscout.core.units import fmt_rate, fmt_seconds
from gpuscout.diagnose.analysis import helped
from gpuscout.diagnose.records import DoctorReport, Fix, Timing
from gpuscout.measure.monitor_warnings import monitor_warnings
from gpuscout.report.console import literal


def _speedup(fix: Fix) -> str:
    if fix.speedup is None:
        return "-"
    text = f"{fix.speedup:.2f}x"
    if fix.speedup_low is not None and fix.speedup_high is not None:
        text += f" [{fix.speedup_low:.2f}-{fix.speedup_high:.2f}]"
    return text


def _timing(t: Timing) -> str:
    return f"{fmt_rate(t.samples_per_second)} samples/s ({fmt_seconds(t.mean_s)} per batch)"


def fixes_table(report: DoctorReport) -> Table:
    table = Table(title="fixes, ranked by measured speedup", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("fix")
    table.add_column("speedup [95% range]", justify="right")
    table.add_column("samples/s", justify="right")
    table.add_column("note")
    rank = 0
    for fix in report.fixes:
        if fix.status == "measured" and not fix.in_baseline:
            rank += 1
            number = str(rank)
        else:
            number = "-"
        name = fix.name + (" (in the baseline)" if fix.in_baseline else "")
        note = fix.note if fix.status == "measured" else f"{fix.status}: {fix.note}"
        sps = fmt_rate(fix.samples_per_second) if fix.samples_per_second else "-"
        table.add_row(number, name, _speedup(fix), sps, note)
    if report.combined is not None:
        c = report.combined
        sps = fmt_rate(c.samples_per_second) if c.samples_per_second else "-"
        table.add_row("all", c.name, _speedup(c), sps, c.note)
    return table


def print_doctor(report: DoctorReport, console: Console) -> None:
    a = report.analysis
    console.print(
        f"[bold]gpuscout doctor[/bold] · {report.workload} on {report.device} "
        f"({report.device_name}) · batch {report.batch_size}"
    )
    colour = "red" if a.verdict.startswith("input-bound") else "green"
    console.print(
        f"verdict: [bold {colour}]{a.verdict}[/bold {colour}] — "
        f"{a.input_wait_fraction:.0%} of each step waits for input"
    )
    console.print(f"  {a.explanation}")
    console.print(
        f"  data alone {_timing(a.data)} · step alone {_timing(a.step)} · "
        f"training loop {_timing(a.together)}"
    )
    if a.device_busy_fraction is not None:
        rule = (
            f"below article 001's {PIPELINE_STARVED_BELOW:.0%} rule of thumb"
            if a.device_busy_fraction < PIPELINE_STARVED_BELOW
            else ""
        )
        console.print(f"  GPU busy {a.device_busy_fraction:.0%} during the loop (NVML) {rule}")
    if a.busiest_core_data is not None:
        console.print(
            f"  CPU: the busiest core was {a.busiest_core_data:.0%} busy while only the data "
            "pipeline ran (near 100%: one thread, often Python, is the limit)"
        )
    console.print(fixes_table(report))
    console.print("[bold]code for each fix[/bold]")
    for fix in report.fixes:
        if fix.code and fix.status == "measured":
            verdict = "" if helped(fix) else " - no gain measured here"
            console.print(f"  [bold]{fix.name}[/bold] ({_speedup(fix)}){verdict}")
            for line in fix.code.splitlines():
                console.print(f"    {line}", markup=False, highlight=False)
    if report.batch_search:
        tried = ", ".join(
            f"{b} {'fits' if ok else 'does not fit'}" for b, ok in report.batch_search
        )
        console.print(f"batch search: {tried}")
    if report.monitor is not None:
        for warning in monitor_warnings(report.monitor):  # throttling, a lost GPU, ...
            console.print(f"[yellow]warning:[/yellow] {literal(warning)}")
        for notice in report.monitor.notices:
            console.print(f"note: {notice}")
    console.print("[bold]assumptions[/bold]")
    for note in report.assumptions:
        console.print(f"  · {note}")
