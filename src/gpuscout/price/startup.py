"""The start-up a rented option waits for and pays before its first step: one figure for
``cost``, ``advise`` and the report, from the file ``cloud plan`` reads too."""

from __future__ import annotations

from gpuscout.catalog.cloud_overheads import cloud_overheads
from gpuscout.units import fmt_hours


def startup_hours() -> float:
    """What a rented machine takes before the job's first step, billed: provisioning and
    boot, then installing the software (``catalog/data/v1/cloud_overheads.csv``, the figures
    ``cloud plan`` uses). Several machines start side by side. Copying the data in is not
    counted: gpuscout is not told its size."""
    rows = cloud_overheads()
    return (rows["startup_s"].value + rows["install_s"].value) / 3600


def startup_note() -> str:
    rows = cloud_overheads()
    return (
        f"every rented option's time and cost include {fmt_hours(startup_hours())} of start-up,"
        f" billed: a machine provisioned and booted ({rows['startup_s'].value / 60:g} min) and "
        f"the software installed ({rows['install_s'].value / 60:g} min), both assumed, not "
        "measured (catalog/data/v1/cloud_overheads.csv, as cloud plan uses them); copying your "
        "data in is not counted (its size is not known); owned options have none"
    )


__all__ = ["startup_hours", "startup_note"]
