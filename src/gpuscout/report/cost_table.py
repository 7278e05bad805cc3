"""The cost table: options side by side, cheapest effective total first."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from gpuscout.core.units import fmt_hours, fmt_sig, fmt_usd
from gpuscout.price import CostLine, UnpricedLine


def cost_table(lines: list[CostLine], job: str, unpriced: Sequence[UnpricedLine] = ()) -> Table:
    """Priced options, cheapest first, then those without a price: shown (time, energy), with
    "no price in the catalog" and why in place of the money."""
    table = Table(title=f"gpuscout cost · {job}", title_justify="left")
    for name in ("option", "$/hour", "wall time", "cost", "energy", "rework", "delay"):
        table.add_column(name, justify="left" if name == "option" else "right")
    table.add_column("total", justify="right", style="bold")
    table.add_column("notes")
    for line in lines:
        rework = (
            f"{fmt_hours(line.rework_hours)} · {fmt_usd(line.rework_usd)}"
            if line.rework_hours
            else ""
        )
        owned = line.provider == "owned"
        even = (
            f"; pays for itself vs renting after {line.break_even_months:.0f} months"
            if line.break_even_months
            else ""
        )
        energy = f"{fmt_sig(line.energy_kwh)} kWh" + (
            f" ({fmt_usd(line.energy_usd)})" if owned else ""
        )
        table.add_row(
            f"{line.count} x {line.gpu} ({line.provider}"
            + (f", {line.condition})" if line.condition else ")"),
            f"${line.usd_per_hour:,.2f}",
            fmt_hours(line.hours)
            + (f" ({fmt_sig(line.hours / 24)} d)" if line.hours >= 48 else ""),
            fmt_usd(line.total_usd),
            energy,
            rework,
            fmt_usd(line.delay_usd) if line.delay_usd else "",
            fmt_usd(line.effective_usd),
            "; ".join(line.notes) + even,
        )
    for rest in unpriced:
        too_big = rest.reason.startswith("does not fit")
        table.add_row(
            f"{rest.count} x {rest.gpu} ({rest.provider})",
            "not priced" if too_big else "no price",
            fmt_hours(rest.hours)
            + (f" ({fmt_sig(rest.hours / 24)} d)" if rest.hours >= 48 else ""),
            "",
            f"{fmt_sig(rest.energy_kwh)} kWh",
            fmt_hours(rest.rework_hours) if rest.rework_hours else "",
            "",
            "does not fit" if too_big else "no price in the catalog",
            "; ".join([f"{rest.reason}: {rest.fix}", *rest.notes]),
        )
    return table
