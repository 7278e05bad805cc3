"""The device monitor's summary as table rows: what the CPU and each GPU did during a run."""

from __future__ import annotations

from gpuscout.core.records import GpuSummary, MonitorSummary
from gpuscout.core.units import fmt_bytes


def _pct(value: float | None) -> str:
    return f"{value * 100:.0f}%" if value is not None else "-"


def cpu_row(m: MonitorSummary) -> tuple[str, str]:
    parts = [
        f"all {m.cpu_cores} cores {_pct(m.cpu_utilization_mean)}",
        f"busiest core {_pct(m.cpu_busiest_core_mean)}",
    ]
    if m.process_cpu_cores_mean is not None:
        parts.append(f"the run's process {m.process_cpu_cores_mean:.2g} cores")
    if m.process_rss_max_bytes is not None:
        parts.append(f"resident max {fmt_bytes(m.process_rss_max_bytes)}")
    if m.cpu_frequency_mean_mhz:
        parts.append(f"{m.cpu_frequency_mean_mhz:,.0f} MHz")
    return "CPU (monitor)", " · ".join(parts)


def gpu_row(g: GpuSummary) -> tuple[str, str]:
    parts = ["LOST during the run (NVML: GPU is lost)"] if g.lost else []
    parts.append(f"busy {_pct(g.utilization_mean)}")
    if g.sm_clock_mean_mhz is not None:
        top = f" of {g.sm_clock_max_mhz:,.0f}" if g.sm_clock_max_mhz else ""
        parts.append(
            f"SM clock {g.sm_clock_mean_mhz:,.0f}{top} MHz (min {g.sm_clock_min_mhz or 0:,.0f})"
        )
    if g.power_mean_w is not None:
        limit = f" of {g.power_limit_w:.0f} W" if g.power_limit_w else ""
        parts.append(f"{g.power_mean_w:.0f} W{limit}")
    if g.temperature_max_c is not None:
        parts.append(f"max {g.temperature_max_c:.0f} °C")
    if g.memory_used_max_bytes is not None:
        parts.append(f"memory used max {fmt_bytes(g.memory_used_max_bytes)}")
    if g.energy_j is not None:
        parts.append(f"{g.energy_j / 3.6e6:.3g} kWh")
    if g.clock_events:
        parts.append("clock events: " + ", ".join(g.clock_events))
    return f"GPU {g.index} (monitor)", " · ".join(parts)


def monitor_rows(m: MonitorSummary) -> list[tuple[str, str]]:
    """Rows for a result table; the window and sampling rate go in the first one."""
    label, text = cpu_row(m)
    rows = [(label, f"{text} · {m.samples} samples at {1 / m.interval_s:g} Hz over {m.window}")]
    return rows + [gpu_row(g) for g in m.gpus]
