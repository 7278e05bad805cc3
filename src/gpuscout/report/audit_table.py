"""Audit verdicts in the terminal: a summary table, then the reasons and sources per claim; a
relative claim as a table of its settings, then where it can hold and every assumption."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuscout.audit import ClaimVerdict
from gpuscout.audit.relative import RelativeVerdict

STYLE = {
    "impossible": "bold red",
    "implausible": "yellow",
    "plausible": "green",
    "contradicted": "bold red",
    "confirmed": "green",
    "unverifiable": "yellow",
    "holds within range": "green",
    "outside range": "bold red",
    "skipped": "dim",
    "holds": "green",
    "depends on setting": "yellow",
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


def _relative_table(v: RelativeVerdict) -> Table:
    table = Table(
        title=f"gpuscout audit · relative claim: {v.gpu_name} = {v.claimed_ratio:g}x "
        f"{v.reference_name}, {v.workload}, batch {v.batch_size} per GPU",
        title_justify="left",
    )
    table.add_column("setting")
    for gpu in (v.gpu_id, v.reference_id):
        table.add_column(f"{gpu} {v.unit}/s", justify="right")
    for name in ("predicted ratio", "range"):
        table.add_column(name, justify="right")
    table.add_column("verdict")
    for j in v.settings:
        shown = [
            _num(j.samples_per_second.get(g), ",.0f") + ("" if j.fits_memory.get(g, True) else " *")
            for g in (v.gpu_id, v.reference_id)
        ]
        table.add_row(
            f"{j.setting}\n[dim]{j.meaning}[/]",
            *(s if j.ratio is not None else "" for s in shown),
            _num(j.ratio, ".2f") + "x" if j.ratio is not None else "",
            f"{j.low:.2f}-{j.high:.2f}x" if j.low is not None and j.high is not None else "",
            f"[{STYLE[j.verdict]}]{j.verdict}[/]" + (f"\n{j.reason}" if j.reason else ""),
        )
    return table


def print_relative(v: RelativeVerdict, console: Console) -> None:
    """The settings' table, the overall line, then each setting's own notes and the
    assumptions and sources every setting shares."""
    console.print(_relative_table(v))
    if any(not fits for j in v.settings for fits in j.fits_memory.values()):
        console.print("* does not hold this batch in that setting (see the setting's notes)")
    console.print(f"overall: [{STYLE[v.verdict]}]{v.verdict}[/]: {v.overall}", highlight=False)
    for j in v.settings:
        for note in j.notes:
            console.print(f"   {j.setting}: {note}", highlight=False)
    for line in v.assumptions:
        console.print(f"   assumption: {line}", highlight=False)
    for line in v.sources:
        console.print(f"   source: {line}", highlight=False)
