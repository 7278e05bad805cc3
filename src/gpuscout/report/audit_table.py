"""Audit verdicts in the terminal: a summary table, then the reasons and sources per claim."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuscout.audit import ClaimVerdict

STYLE = {
    "impossible": "bold red",
    "implausible": "yellow",
    "plausible": "green",
    "contradicted": "bold red",
    "confirmed": "green",
    "unverifiable": "yellow",
}


def _num(v: float | str | None, fmt: str) -> str:
    return "" if v is None or isinstance(v, str) else format(v, fmt)


def _speed_table(rows: list[tuple[int, ClaimVerdict]]) -> Table:
    table = Table(title="gpuscout audit · speed claims", title_justify="left")
    for name in ("#", "claim", "verdict", "implied /s per GPU", "implied TFLOP/s"):
        table.add_column(name, justify="right" if name[0] in "#i" else "left")
    for name in ("peak TFLOP/s", "MFU", "best published MFU"):
        table.add_column(name, justify="right")
    for i, v in rows:
        n = v.numbers
        table.add_row(
            str(i),
            v.claim,
            f"[{STYLE[v.verdict]}]{v.verdict}[/]",
            _num(n.get("implied_samples_per_second_per_gpu"), ",.0f"),
            _num(n.get("implied_tflops_per_gpu"), ",.0f"),
            _num(n.get("peak_tflops"), "g"),
            _num(n.get("implied_mfu"), ".0%"),
            _num(n.get("best_published_mfu"), ".0%"),
        )
    return table


def _spec_table(rows: list[tuple[int, ClaimVerdict]]) -> Table:
    table = Table(title="gpuscout audit · spec claims", title_justify="left")
    for name in ("#", "claim", "verdict", "claimed", "catalog"):
        table.add_column(name, justify="right" if name in ("#", "claimed") else "left")
    for i, v in rows:
        catalog = "; ".join(
            f"{v:g}" if isinstance(v, float) else str(v)
            for k, v in v.numbers.items()
            if k != "claimed"
        )
        claimed = v.numbers.get("claimed")
        table.add_row(
            str(i),
            v.claim,
            f"[{STYLE[v.verdict]}]{v.verdict}[/]",
            f"{claimed:g}" if isinstance(claimed, float) else str(claimed or ""),
            catalog,
        )
    return table


def print_verdicts(verdicts: list[ClaimVerdict], console: Console) -> None:
    numbered = list(enumerate(verdicts, 1))
    speed = [(i, v) for i, v in numbered if v.kind == "speed"]
    spec = [(i, v) for i, v in numbered if v.kind == "spec"]
    if speed:
        console.print(_speed_table(speed))
    if spec:
        console.print(_spec_table(spec))
    for i, v in numbered:
        console.print(f"{i}. {v.claim}: [{STYLE[v.verdict]}]{v.verdict}[/]", highlight=False)
        rate = v.numbers.get("peak_rate")
        if isinstance(rate, str):
            console.print(f"   peak used: {rate}", highlight=False)
        for reason in v.reasons:
            console.print(f"   - {reason}", highlight=False)
        for line in v.assumptions:
            console.print(f"   assumption: {line}", highlight=False)
        for line in v.sources:
            console.print(f"   source: {line}", highlight=False)
