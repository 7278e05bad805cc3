"""The cost table: options side by side, cheapest effective total first."""

from __future__ import annotations

from rich.table import Table

from gpuscout.price import CostLine


def _hours(h: float) -> str:
    return f"{h:,.0f} h" if h >= 10 else f"{h:.1f} h"


def cost_table(lines: list[CostLine], job: str) -> Table:
    table = Table(title=f"gpuscout cost · {job}", title_justify="left")
    for name in ("option", "$/hour", "wall time", "cost", "energy", "rework", "delay"):
        table.add_column(name, justify="left" if name == "option" else "right")
    table.add_column("total", justify="right", style="bold")
    table.add_column("notes")
    for line in lines:
        rework = (
            f"{_hours(line.rework_hours)} · ${line.rework_usd:,.0f}" if line.rework_hours else ""
        )
        owned = line.provider == "owned"
        even = (
            f"; pays for itself vs renting after {line.break_even_months:.0f} months"
            if line.break_even_months
            else ""
        )
        energy = f"{line.energy_kwh:,.0f} kWh" + (f" (${line.energy_usd:,.0f})" if owned else "")
        table.add_row(
            f"{line.count} x {line.gpu} ({line.provider})",
            f"${line.usd_per_hour:,.2f}",
            f"{_hours(line.hours)} ({line.hours / 24:.1f} d)",
            f"${line.total_usd:,.0f}",
            energy,
            rework,
            f"${line.delay_usd:,.0f}" if line.delay_usd else "",
            f"${line.effective_usd:,.0f}",
            "; ".join(line.notes) + even,
        )
    return table
