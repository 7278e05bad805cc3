"""What the device monitor saw, as warnings that say what to do.

Pure: it reads a run's :class:`~gpuscout.core.records.MonitorSummary` only, so reports (doctor's
view, soak's evidence) can word a stored run's monitor without the sampling machinery.
"""

from __future__ import annotations

from gpuscout.core.records import MonitorSummary
from gpuscout.measure.nvml import THROTTLING

CLOCK_DROP = 0.85  # an SM clock under 85% of the window's mean is a clock drop


def monitor_warnings(summary: MonitorSummary) -> list[str]:
    """Warnings, each with what to do, for what the monitor saw during a run."""
    out: list[str] = []
    for g in summary.gpus:
        throttled = [e for e in g.clock_events if e in THROTTLING]
        if throttled:
            out.append(
                f"GPU {g.index} throttled during the run ({', '.join(throttled)}): the figure is "
                "below what this GPU does when cool and within power; check cooling, airflow "
                "and the power limit (nvidia-smi -q -d PERFORMANCE)."
            )
        mean, low = g.sm_clock_mean_mhz, g.sm_clock_min_mhz
        if mean and low is not None and low < CLOCK_DROP * mean:
            out.append(
                f"GPU {g.index}'s SM clock dropped to {low:.0f} MHz (mean {mean:.0f} MHz) during "
                "the run: clocks were not steady, so neither is the figure."
            )
        if g.ecc_uncorrected:
            out.append(
                f"GPU {g.index} reported {g.ecc_uncorrected} uncorrected ECC memory error(s) "
                "during the run: results may be wrong; have the GPU checked (nvidia-smi -q -d ECC)."
            )
        if g.pcie_replays:
            out.append(
                f"GPU {g.index} replayed {g.pcie_replays} PCIe transfers during the run: a "
                "marginal link or riser slows host-device copies; reseat the card."
            )
        if g.xid_errors:
            out.append(
                f"GPU {g.index} raised XID error(s) {sorted(set(g.xid_errors))}: the driver saw a "
                "fault; see NVIDIA's XID catalog and dmesg."
            )
        if g.lost:
            out.append(
                f"GPU {g.index} was lost during the run (NVML: GPU is lost): it fell off the bus, "
                "so the figure is not this GPU's steady speed; check power, seating and dmesg "
                "(XID 79), then reset or reboot."
            )
    out += [f"device monitor: {e}." for e in summary.errors]
    return out
