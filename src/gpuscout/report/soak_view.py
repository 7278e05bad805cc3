"""``soak``'s verdict and evidence in the terminal, and its progress line."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from gpuscout.core.units import fmt_seconds
from gpuscout.diagnose.records import SoakReport

COLOURS = {"pass": "green", "fail": "red", "inconclusive": "yellow", "incomplete": "yellow"}
# What each verdict means, printed beside it: INCONCLUSIVE must not read as a softer pass.
MEANING = {
    "pass": "no fault, and a drop beyond the limit ruled out",
    "fail": "a fault shown",
    "inconclusive": "no fault shown, none ruled out: the noise is too large to decide",
    "incomplete": "stopped before a verdict could be reached",
}


def progress_text(message: dict[str, Any]) -> str:
    if "phase" in message:
        return f"soak: {message['phase']}"
    p = message.get("progress", {})
    step = p.get("step_s")
    rate = f" · {fmt_seconds(step)} per step" if step else ""
    return (
        f"soak: {fmt_seconds(p.get('elapsed_s', 0))} of {fmt_seconds(p.get('planned_s', 0))} · "
        f"{p.get('steps', 0):,} steps{rate} · Ctrl-C stops and keeps what was measured"
    )


def print_soak(report: SoakReport, run_id: int | None, console: Console) -> None:
    colour = COLOURS[report.verdict]
    console.print(
        f"[bold]gpuscout soak[/bold] · {report.workload} on {report.device} "
        f"({report.device_name}) · batch {report.batch_size} · run {run_id}"
    )
    console.print(
        f"verdict: [bold {colour}]{report.verdict.upper()}[/bold {colour}] "
        f"({MEANING[report.verdict]})"
    )
    for reason in report.reasons:
        console.print(f"  because: {reason}", highlight=False, markup=False)
    console.print("[bold]evidence[/bold]")
    for line in report.evidence:
        console.print(f"  · {line}", highlight=False, markup=False)
