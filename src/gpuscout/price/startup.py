"""The start-up a rented option waits for and pays before its first step: one figure for
``cost``, ``advise`` and the report, from the file ``cloud plan`` reads too."""

from __future__ import annotations

from gpuscout.catalog.cloud_overheads import cloud_overheads
from gpuscout.catalog.cost_defaults import cost_defaults
from gpuscout.core.units import fmt_hours


def startup_hours(data_gb: float = 0.0, gbit: float | None = None) -> float:
    """What a rented machine takes before the job's first step, billed: provisioning and
    boot, installing the software (``catalog/data/v1/cloud_overheads.csv``, the figures
    ``cloud plan`` uses), then copying ``data_gb`` of the user's data in at ``gbit`` (the
    ``data_copy_gbit`` of ``cost_defaults.csv``, sourced, where not given; 0 GB where the user
    gave no size). Several machines start side by side."""
    rows = cloud_overheads()
    return (rows["startup_s"].value + rows["install_s"].value) / 3600 + _copy_hours(data_gb, gbit)


def _rate(gbit: float | None) -> float:
    return cost_defaults().value("data_copy_gbit") if gbit is None else gbit


def _copy_hours(data_gb: float, gbit: float | None) -> float:
    return data_gb * 8 / _rate(gbit) / 3600 if data_gb else 0.0


def startup_note(data_gb: float = 0.0, gbit: float | None = None) -> str:
    rows = cloud_overheads()
    rate = _rate(gbit)
    source = (
        cost_defaults().source("data_copy_gbit")
        if rate == cost_defaults().value("data_copy_gbit")
        else "given"
    )
    copy = (
        f", then your {data_gb:g} GB of data copied in at {rate:g} Gb/s "
        f"({fmt_hours(_copy_hours(data_gb, gbit))}; data_copy_gbit: {source})"
        if data_gb
        else "; copying your data in is not counted (give its size with --data-gb)"
    )
    return (
        f"every rented option's time and cost include {fmt_hours(startup_hours(data_gb, gbit))}"
        f" of start-up, billed: a machine provisioned and booted "
        f"({rows['startup_s'].value / 60:g} min) and the software installed "
        f"({rows['install_s'].value / 60:g} min), both assumed, not measured "
        f"(catalog/data/v1/cloud_overheads.csv, as cloud plan uses them){copy}; owned options "
        "have none"
    )


__all__ = ["startup_hours", "startup_note"]
