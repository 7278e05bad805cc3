"""The full recommendation in the terminal: ranked options with reasons, then the front."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuscout.advise.recommend import Advice, dollars
from gpuscout.core.units import fmt_hours, fmt_usd
from gpuscout.report.console import literal


def print_advice(advice: Advice, console: Console) -> None:
    table = Table(title="gpuscout advise · ranked", title_justify="left")
    numbers = ("#", "time", "total", "paid")
    for name in ("#", "option", "time", "total", "paid", "why"):
        table.add_column(name, justify="right" if name in numbers else "left")
    for i, c in enumerate(advice.ranked, 1):
        table.add_row(
            str(i),
            literal(c.label + (" *" if c.pareto else "")),
            fmt_hours(c.hours),
            fmt_usd(c.total_usd),
            f"{dollars(c.paid_usd)} {c.paid_basis}",
            literal("; ".join(c.reasons)),
        )
    console.print(table)
    for line in advice.caveats:
        console.print(f"caveat: {literal(line)}", highlight=False)
    console.print(
        "total: the job's cost (an owned option's purchase amortised over it); paid: money "
        "paid, an owned option's purchase up front or a rented one's rental for the job"
        + (f", which the ${advice.budget_usd:,.0f} budget is compared with"
           if advice.budget_usd is not None else ""),
        highlight=False,
    )  # fmt: skip
    front = ", ".join(
        f"{c.count}x{c.gpu}@{c.provider} {fmt_hours(c.hours)} {fmt_usd(c.total_usd)}"
        for c in advice.pareto
    )
    console.print(f"* Pareto front (time vs cost): {literal(front)}", highlight=False)
    if advice.rejected:
        why = "; ".join(f"{n} {reason}" for reason, n in advice.rejected.items())
        console.print(f"left out: {literal(why)}", highlight=False)
    for line in advice.assumptions:
        console.print(f"assumption: {literal(line)}", highlight=False)
