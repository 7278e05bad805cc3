"""The device monitor: samples GPUs (NVML) and the CPU (psutil) in the background.

It runs beside a measurement, in the process that *starts* the measuring child when there is
one, so that sampling never competes with the training step for the child's interpreter.
Memory stays bounded however long it runs: summary figures are running aggregates, and the
timeline keeps at most ``max_samples`` points, thinning itself 2:1 when full, so a 12-hour soak
keeps an evenly spaced picture of the whole run instead of only its last minutes.

Monitoring never costs a measurement, but it never fails silently either: if the sampling
thread raises, the exception is kept and the run carries it as a warning (what the monitor did
not see after it is missing, not "fine"); NVML errors other than an absent feature are counted
and reported the same way.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

from gpuscout.core.records import Energy, GpuSummary, MonitorSummary, RunResult
from gpuscout.measure.aggregate import RunningAgg
from gpuscout.measure.energy import EnergyLog, Watched, run_energy, seq_len
from gpuscout.measure.monitor_warnings import monitor_warnings
from gpuscout.measure.nvml import Nvml, clock_event_names, nvml_indices, open_nvml
from gpuscout.measure.rapl import HWMON, POWERCAP, PackageMeter

DEFAULT_HZ = 10.0
MAX_SAMPLES = 2400


class Monitor:
    """Samples at ``hz`` in a thread between :meth:`start` and :meth:`stop`.

    ``pid``: the process whose memory and CPU use are reported (default: this one).
    ``gpus``: NVML indices to watch (default: all). ``nvml_lib``: a pynvml-like module (tests).
    ``rapl``: where the CPU packages' energy counters are (powercap, hwmon; a tree in tests).
    """

    def __init__(
        self,
        pid: int | None = None,
        hz: float = DEFAULT_HZ,
        gpus: Sequence[int] | None = None,
        nvml_lib: Any = None,
        max_samples: int = MAX_SAMPLES,
        clock: Callable[[], float] = time.monotonic,
        rapl: tuple[Path, Path] = (POWERCAP, HWMON),
    ) -> None:
        self.interval = 1.0 / hz
        self.max_samples = max_samples
        self.clock = clock
        self.notices: list[str] = []
        self.nvml: Nvml | None
        self.nvml, notice = open_nvml(nvml_lib)
        if notice:
            self.notices.append(notice)
        all_gpus = range(len(self.nvml.handles)) if self.nvml else range(0)
        self.gpus = [i for i in all_gpus if gpus is None or i in gpus]
        # Kept after NVML is closed, for the summary.
        self._names = self.nvml.names if self.nvml else []
        self._max_clock = self.nvml.max_sm_clock_mhz if self.nvml else []
        self._power_limit = self.nvml.power_limit_w if self.nvml else []
        self._gpu_notice = notice
        self.rapl = PackageMeter(*rapl)
        self.energy_log = EnergyLog(max_samples)  # counters and step anchors, for energy
        self.process = psutil.Process(pid)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._start = clock()
        self._stride, self._count = 1, 0
        self.timeline: dict[str, list[float | None]] = defaultdict(list)
        self.marks: list[tuple[float, str]] = []
        self._window = "whole run"
        self._window_start = self._start
        self._aggs: dict[str, RunningAgg] = defaultdict(RunningAgg)
        self._events: dict[int, set[str]] = defaultdict(set)
        self._xids: dict[int, list[int]] = defaultdict(list)
        self._samples = 0
        self._died: str | None = None  # the sampling thread's exception, once it has died
        self._nvml_errors: dict[str, int] = {}  # snapshots of Nvml.errors and Nvml.lost,
        self._lost: set[int] = set()  # kept after NVML is closed
        self._unnamed_xids: list[int] = []  # XIDs on a device NVML's handle did not match
        psutil.cpu_percent(percpu=True)  # prime: the first call has no interval to measure
        self._process_cpu(0.0)

    def _process_cpu(self, default: float | None) -> float | None:
        try:
            return float(self.process.cpu_percent()) / 100.0
        except psutil.Error:
            return default

    def start(self) -> Monitor:
        self._thread = threading.Thread(target=self._run, name="gpuscout-monitor", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if not self._sample_or_keep_error():
                return

    def _sample_or_keep_error(self) -> bool:
        """One sample; on an exception, keep it for the summary and say False (stop sampling:
        the monitor's state after an unexpected error is not trusted)."""
        try:
            self.sample()
        except Exception as exc:  # anything: a dying monitor must not take the run with it
            with self._lock:
                self._died = (
                    f"the device monitor stopped {self.clock() - self._start:.1f} s into the run "
                    f"({type(exc).__name__}: {exc}): throttling, ECC and XID errors after that "
                    "went unseen"
                )
            return False
        return True

    def stop(self) -> None:
        """Stop sampling (idempotent) and release NVML."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        last = not self._stopped and (self.nvml is not None or self.rapl.readable)
        self._stopped = True
        if last and self._died is None:
            self._sample_or_keep_error()  # a last reading: counters' deltas cover the end
        if self.nvml is not None:
            self.nvml.close()
            self.nvml = None

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def begin_window(self, label: str) -> None:
        """Summaries from now on cover only what follows (e.g. the measured steps)."""
        with self._lock:
            now = self.clock() - self._start
            self.marks.append((now, label))
            self._window, self._window_start = label, self.clock()
            self._aggs, self._events = defaultdict(RunningAgg), defaultdict(set)
            self._xids = defaultdict(list)
            self._samples = 0

    def sample(self) -> None:
        """Take one reading of everything (called by the thread; public for tests)."""
        row: dict[str, float | None] = {}
        cores = psutil.cpu_percent(percpu=True)
        if cores:
            row["cpu"] = sum(cores) / len(cores) / 100.0
            row["cpu_busiest"] = max(cores) / 100.0
            for i, pct in enumerate(cores):
                row[f"core{i}"] = pct / 100.0
        row["process_cpu"] = self._process_cpu(None)
        try:
            row["rss"] = float(self.process.memory_info().rss)
        except psutil.Error:
            row["rss"] = None
        freq = psutil.cpu_freq()
        row["cpu_mhz"] = float(freq.current) if freq and freq.current else None
        readings = {i: self.nvml.read(i) for i in self.gpus} if self.nvml else {}
        xids = self.nvml.xid_errors() if self.nvml else []
        packages = self.rapl.read()
        with self._lock:
            self._samples += 1
            counters = {f"cpu.{name}": joules for name, joules in packages.items()}
            for i, r in readings.items():
                for name in (
                    "utilization",
                    "memory_used_bytes",
                    "memory_total_bytes",
                    "sm_clock_mhz",
                    "power_w",
                    "temperature_c",
                    "ecc_uncorrected",
                    "ecc_corrected",
                    "pcie_replays",
                    "energy_j",
                ):
                    row[f"gpu{i}.{name}"] = getattr(r, name)
                for name in ("energy_j", "power_w"):
                    if (value := getattr(r, name)) is not None:
                        counters[f"gpu{i}.{name}"] = value
                if r.clock_event_bits:
                    self._events[i].update(clock_event_names(r.clock_event_bits))
            for index, xid in xids:
                if index >= 0:
                    self._xids[index].append(xid)
                else:
                    self._unnamed_xids.append(xid)
            if self.nvml is not None:
                self._nvml_errors, self._lost = dict(self.nvml.errors), set(self.nvml.lost)
            for key, value in row.items():
                self._aggs[key].add(value)
            self._keep(row)
            self.energy_log.sample(self.clock() - self._start, counters)

    def step_progress(self, steps: int, elapsed_s: float) -> None:
        """The measuring child had done ``steps`` steps ``elapsed_s`` after its protocol began
        (its progress message, received now): anchors the steps to this clock, for energy."""
        with self._lock:
            self.energy_log.anchor(self.clock() - self._start, steps, elapsed_s)

    def energy(self, result: RunResult) -> Energy | None:
        """The energy of ``result``'s measured steps from this monitor's samples (after stop)."""
        with self._lock:
            watched = Watched(
                gpus=[
                    (i, self._names[i] if i < len(self._names) else f"GPU {i}") for i in self.gpus
                ],
                gpu_notice=self._gpu_notice,
                cpu_source=self.rapl.source if self.rapl.readable else None,
                cpu_reason=self.rapl.reason,
                interval_s=self.interval,
            )
            log = self.energy_log
            return run_energy(result, log.samples, log.anchors, watched, seq_len(result))

    def _keep(self, row: dict[str, float | None]) -> None:
        self._count += 1
        if (self._count - 1) % self._stride:
            return
        self.timeline["t"].append(round(self.clock() - self._start, 3))
        for key in ("cpu", "cpu_busiest", "process_cpu", "rss", *self._gpu_columns(row)):
            self.timeline[key].append(row.get(key))
        if len(self.timeline["t"]) >= self.max_samples:  # thin 2:1, sample half as often
            for key in self.timeline:
                self.timeline[key] = self.timeline[key][::2]
            self._stride *= 2

    @staticmethod
    def _gpu_columns(row: dict[str, float | None]) -> list[str]:
        wanted = (".utilization", ".memory_used_bytes", ".sm_clock_mhz", ".power_w")
        return [k for k in row if k.startswith("gpu") and k.endswith(wanted)]

    def summary(self) -> MonitorSummary:
        with self._lock:
            a = self._aggs
            gpus = [self._gpu_summary(i) for i in self.gpus]
            rss = a["rss"].max
            return MonitorSummary(
                window=self._window,
                interval_s=self.interval,
                samples=self._samples,
                seconds=self.clock() - self._window_start,
                cpu_utilization_mean=a["cpu"].mean,
                cpu_busiest_core_mean=a["cpu_busiest"].mean,
                cpu_per_core_mean=[
                    a[f"core{i}"].mean or 0.0
                    for i in range(psutil.cpu_count() or 0)
                    if f"core{i}" in a
                ],
                process_cpu_cores_mean=a["process_cpu"].mean,
                process_rss_max_bytes=int(rss) if rss is not None else None,
                cpu_frequency_mean_mhz=a["cpu_mhz"].mean,
                cpu_cores=psutil.cpu_count(),
                gpus=gpus,
                notices=list(self.notices),
                errors=self._errors(),
            )

    def _errors(self) -> list[str]:
        """The monitor's own faults, worst first (called under the lock)."""
        out = [self._died] if self._died else []
        out += [f"{what} ({n} times)" if n > 1 else what for what, n in self._nvml_errors.items()]
        if self._unnamed_xids:
            out.append(
                f"XID error(s) {sorted(set(self._unnamed_xids))} on a GPU NVML's event did not name"
            )
        return out

    def _gpu_summary(self, i: int) -> GpuSummary:
        a = {k.split(".", 1)[1]: v for k, v in self._aggs.items() if k.startswith(f"gpu{i}.")}
        empty = RunningAgg()

        def get(name: str) -> RunningAgg:
            return a.get(name, empty)

        def whole(value: float | None) -> int | None:
            return int(value) if value is not None else None

        return GpuSummary(
            index=i,
            name=self._names[i] if i < len(self._names) else f"GPU {i}",
            utilization_mean=get("utilization").mean,
            utilization_max=get("utilization").max,
            memory_used_max_bytes=whole(get("memory_used_bytes").max),
            memory_total_bytes=whole(get("memory_total_bytes").max),
            sm_clock_mean_mhz=get("sm_clock_mhz").mean,
            sm_clock_min_mhz=get("sm_clock_mhz").min,
            sm_clock_max_mhz=self._max_clock[i] if i < len(self._max_clock) else None,
            power_mean_w=get("power_w").mean,
            power_max_w=get("power_w").max,
            power_limit_w=self._power_limit[i] if i < len(self._power_limit) else None,
            temperature_max_c=get("temperature_c").max,
            clock_events=sorted(self._events.get(i, set()) - {"idle"}),
            ecc_uncorrected=whole(get("ecc_uncorrected").delta),
            ecc_corrected=whole(get("ecc_corrected").delta),
            pcie_replays=whole(get("pcie_replays").delta),
            energy_j=get("energy_j").delta,
            xid_errors=list(self._xids.get(i, [])),
            lost=i in self._lost,
        )

    def timeline_columns(self) -> dict[str, list[float | None]]:
        with self._lock:
            return {k: list(v) for k, v in self.timeline.items()}


def start_monitor(pid: int | None, device: str | None, hz: float = DEFAULT_HZ) -> Monitor | None:
    """A started monitor for a run, or None if even the CPU cannot be watched (the run goes
    on: monitoring must never cost a measurement)."""
    try:
        return Monitor(pid=pid, hz=hz, gpus=nvml_indices(device)).start()
    except psutil.Error:
        return None


def attach(result: RunResult, monitor: Monitor | None) -> RunResult:
    """``result`` with the monitor's summary, timeline, warnings and the energy of its measured
    steps (stops the monitor)."""
    if monitor is None:
        return result
    monitor.stop()
    summary = monitor.summary()
    return result.model_copy(
        update={
            "monitor": summary,
            "energy": monitor.energy(result),
            "monitor_timeline": monitor.timeline_columns(),
            "warnings": [*result.warnings, *monitor_warnings(summary)],
        }
    )
