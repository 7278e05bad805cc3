"""The knobs of the cost arithmetic: each default read from the sourced data file
``catalog/data/v1/cost_defaults.csv`` (never a number in code), each overridable, and each
printed with its source, or "(yours)" where the user gave it, so no figure in a price is
unexplained."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from gpuscout.catalog.cost_defaults import REFERENCE, cost_defaults
from gpuscout.price.startup import startup_note


def _default(name: str) -> Any:
    return field(default_factory=lambda: cost_defaults().value(name))


@dataclass(frozen=True)
class Assumptions:
    """Defaults from the data file; ``yours``: the names the user set (printed "(yours)")."""

    power_utilization: float = _default("power_utilization")  # share of TDP while training
    usd_per_kwh: float = _default("usd_per_kwh")
    amortize_years: float = _default("amortize_years")
    owned_utilization: float = _default("owned_utilization")  # share of a month it trains
    checkpoint_hours: float = _default("checkpoint_hours")
    restart_minutes: float = _default("restart_minutes")
    failures_per_1000_gpu_hours_consumer: float = _default("failures_per_1000_gpu_hours_consumer")
    failures_per_1000_gpu_hours_datacenter: float = _default(
        "failures_per_1000_gpu_hours_datacenter"
    )
    delay_usd_per_day: float = _default("delay_usd_per_day")
    data_copy_gbit: float = _default("data_copy_gbit")
    data_gb: float = 0.0  # the user's data, copied into each rented machine (--data-gb)
    failures: bool = True
    yours: frozenset[str] = frozenset()

    def given(self, **values: float | None) -> Assumptions:
        """These values set by the user (None: not given), marked "(yours)" wherever shown."""
        set_: dict[str, Any] = {k: v for k, v in values.items() if v is not None}
        return replace(self, **set_, yours=self.yours | frozenset(set_))

    def _from(self, *names: str) -> str:
        """Where the figures of one line come from: "(yours)", or each default's source."""
        parts = []
        for name in names:
            if name in self.yours:
                parts.append(f"{name} (yours)")
            elif getattr(self, name) == cost_defaults().value(name):
                parts.append(f"{name}: {cost_defaults().source(name)}")
            else:  # set in code (a test, a library caller): neither the file's nor the user's
                parts.append(f"{name} (given)")
        return " (" + "; ".join(parts) + ")"  # not [...]: rich would read it as markup

    def describe(self) -> dict[str, str]:
        eu = cost_defaults().rows[REFERENCE[0]]
        return {
            "power": f"GPUs draw {self.power_utilization:.0%} of TDP while training"
            + self._from("power_utilization"),
            "energy price": f"${self.usd_per_kwh:g}/kWh (owned hardware; cloud prices include "
            f"it; EU households paid about EUR {eu.value:g}/kWh: {eu.source})"
            + self._from("usd_per_kwh"),
            "amortization": (
                f"owned GPUs paid off over {self.amortize_years:g} years at "
                f"{self.owned_utilization:.0%} utilization, written off to nothing: no resale "
                "value counted, though cards keep some (gpuscout prices lists what they sell "
                "for used, dated), so owning costs less than this says"
                + self._from("amortize_years", "owned_utilization")
            ),
            "failures": (
                f"{self.failures_per_1000_gpu_hours_consumer:g} failures per 1000 GPU-hours on "
                f"consumer cards (no ECC), {self.failures_per_1000_gpu_hours_datacenter:g} on "
                "data-center cards; each costs half a checkpoint interval "
                f"({self.checkpoint_hours:g} h) plus {self.restart_minutes:g} min to restart"
                + self._from(
                    "failures_per_1000_gpu_hours_consumer",
                    "failures_per_1000_gpu_hours_datacenter",
                    "checkpoint_hours",
                    "restart_minutes",
                )
                if self.failures
                else "failures not counted"
            ),
            "delay": f"${self.delay_usd_per_day:g} per day until the run is done"
            + self._from("delay_usd_per_day"),
            "start-up": startup_note(self.data_gb, self.data_copy_gbit),
        }

    def inputs(self) -> list[dict[str, Any]]:
        """Every input as data, for ``--json``: value, unit, and its source or "yours"."""
        table = cost_defaults().rows
        out = []
        for f in fields(self):
            if f.name not in table:
                continue
            row, value = table[f.name], getattr(self, f.name)
            mine = f.name in self.yours
            out.append({
                "name": f.name, "value": value, "unit": row.unit,
                "source": "yours" if mine else row.source if value == row.value else "given",
                "retrieved_on": None if mine else row.retrieved_on.isoformat(),
                "notes": row.notes,
            })  # fmt: skip
        if self.data_gb:  # the user's, not a default: no row of its own in the file
            out.append({"name": "data_gb", "value": self.data_gb, "unit": "GB",
                        "source": "yours", "retrieved_on": None,
                        "notes": "copied into each rented machine"})  # fmt: skip
        return out
