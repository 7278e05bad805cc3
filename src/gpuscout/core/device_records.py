"""What the device monitor saw over a run, and the energy of its measured steps: the records
``gpuscout.core.records.RunResult`` carries in ``monitor`` and ``energy`` (split from records.py to
keep each file small; ``gpuscout.core.records`` re-exports them)."""

from __future__ import annotations

from pydantic import Field

from gpuscout.core.record_base import _Record


class GpuSummary(_Record):
    """One GPU over a run's measured window, as NVML saw it. None: not reported by the GPU."""

    index: int
    name: str
    utilization_mean: float | None = None  # fraction of time a kernel was running
    utilization_max: float | None = None
    memory_used_max_bytes: int | None = None
    memory_total_bytes: int | None = None
    sm_clock_mean_mhz: float | None = None
    sm_clock_min_mhz: float | None = None
    sm_clock_max_mhz: float | None = None  # the device's maximum, not the run's
    power_mean_w: float | None = None
    power_max_w: float | None = None
    power_limit_w: float | None = None
    temperature_max_c: float | None = None
    clock_events: list[str] = Field(default_factory=list)  # reasons seen, idle excluded
    ecc_uncorrected: int | None = None  # new errors during the window
    ecc_corrected: int | None = None
    pcie_replays: int | None = None
    energy_j: float | None = None
    xid_errors: list[int] = Field(default_factory=list)
    lost: bool = False  # NVML answered "GPU is lost": it fell off the bus during the run


class MonitorSummary(_Record):
    """What the device monitor saw over a run (its measured window, when there is one)."""

    window: str  # which part of the run the figures cover
    interval_s: float
    samples: int
    seconds: float
    cpu_utilization_mean: float | None = None  # all cores, fraction
    cpu_busiest_core_mean: float | None = None  # the busiest core at each sample, fraction
    cpu_per_core_mean: list[float] = Field(default_factory=list)  # each core, fraction
    process_cpu_cores_mean: float | None = None  # cores' worth of CPU the process used
    process_rss_max_bytes: int | None = None
    cpu_frequency_mean_mhz: float | None = None
    cpu_cores: int | None = None
    gpus: list[GpuSummary] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    # What went wrong in the monitoring itself: NVML errors other than "not supported" and "no
    # more events", and the sampling thread's exception if it died (sampling stopped there).
    errors: list[str] = Field(default_factory=list)


class DeviceEnergy(_Record):
    device: str  # "GPU 0 (NVIDIA H100 80GB HBM3)", "package-0"
    joules: float = Field(ge=0)
    source: str  # as Energy.source


class Energy(_Record):
    """Energy of the measured steps only (gpuscout.measure.energy). ``source``: "nvml total
    energy", "nvml power x time", "rapl package" or "amd_energy socket"; None: not reported,
    and ``reason`` says why."""

    source: str | None = None
    reason: str | None = None
    joules: float | None = Field(default=None, ge=0)  # every device of the run together
    seconds: float | None = Field(default=None, ge=0)  # the window the joules cover
    joules_per_step: float | None = Field(default=None, ge=0)
    joules_per_sample: float | None = Field(default=None, ge=0)  # of the global batch
    joules_per_token: float | None = Field(default=None, ge=0)  # samples x seq_len
    devices: list[DeviceEnergy] = Field(default_factory=list)
