"""NVIDIA GPUs as NVML reports them: one reading per device per sample.

A thin layer over ``pynvml`` (the nvidia-ml-py package) that turns its calls into plain
numbers in SI-ish units (bytes, MHz, W, °C, J) and never raises for a query a GPU does not
support: a GeForce card has no ECC counters, an old driver no energy counter, and that must not
stop the monitor. An error that is not "not supported" (a GPU that fell off the bus, an unknown
driver error) is not an absent feature, though: it is counted in :attr:`Nvml.errors` and
"GPU is lost" marks the device in :attr:`Nvml.lost`, so the run can say so. The module object is
injected, so the tests drive this layer with a recorded fake (there is no GPU on the test
machines).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any

from gpuscout.core.limits import MAX_DEVICES
from gpuscout.core.ranges import NotWhole, whole

# Clock-event ("throttle") reasons: NVML's bit values (nvml.h, nvmlClocksEventReason*).
CLOCK_EVENT_BITS: dict[int, str] = {
    0x1: "idle",
    0x2: "application clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
    0x100: "display clock setting",
}
# The reasons that mean the GPU ran slower than it could have for the work given.
THROTTLING = frozenset(
    {
        "software power cap",
        "hardware slowdown",
        "software thermal slowdown",
        "hardware thermal slowdown",
        "hardware power brake",
    }
)

_SM_CLOCK = 1  # NVML_CLOCK_SM
_GPU_TEMPERATURE = 0  # NVML_TEMPERATURE_GPU
_UNCORRECTED, _CORRECTED, _VOLATILE = 1, 0, 0  # NVML_MEMORY_ERROR_TYPE_*, NVML_VOLATILE_ECC
_XID_EVENT = 8  # nvmlEventTypeXidCriticalError
# NVML return codes (nvml.h, NVML_ERROR_*). pynvml's NVMLError carries one as ``value``.
_INVALID_ARGUMENT, _NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND = 2, 3, 4, 13
_TIMEOUT = 10  # from nvmlEventSetWait: no event arrived, i.e. nothing happened
_GPU_IS_LOST = 15
# Codes that mean "this device or driver does not offer that reading": an absent feature.
_ABSENT = frozenset({_INVALID_ARGUMENT, _NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND})


@dataclass(frozen=True)
class GpuReading:
    """One device at one instant; None where the device or driver does not report it."""

    utilization: float | None  # fraction of the sample period a kernel was running
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    sm_clock_mhz: float | None
    power_w: float | None
    temperature_c: float | None
    clock_event_bits: int | None
    ecc_uncorrected: int | None  # volatile count since the driver loaded
    ecc_corrected: int | None
    pcie_replays: int | None
    energy_j: float | None  # since the driver loaded


def clock_event_names(bits: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_BITS.items() if bits & bit]


class Nvml:
    """The GPUs NVML sees. Use :func:`open_nvml`; call :meth:`close` when done."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        # Errors that are not an absent feature, "what happened" -> how many times (bounded: a
        # lost GPU fails every query of every sample, and that is one line, not thousands).
        self.errors: dict[str, int] = {}
        self.lost: set[int] = set()  # indices of the devices NVML called lost
        lib.nvmlInit()
        count = int(lib.nvmlDeviceGetCount())
        self.handles = [lib.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self._addresses = [_address(h) for h in self.handles]
        self.names = [_text(lib.nvmlDeviceGetName(h)) for h in self.handles]
        self.max_sm_clock_mhz = [
            self._query(lambda h: float(lib.nvmlDeviceGetMaxClockInfo(h, _SM_CLOCK)), h)
            for h in self.handles
        ]
        self.power_limit_w = [
            self._query(lambda h: lib.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0, h)
            for h in self.handles
        ]
        self._events: Any = None

    def _query(self, fn: Any, handle: Any) -> Any:
        try:
            return fn(handle)
        except self.lib.NVMLError as exc:
            code = _code(exc)
            if code not in _ABSENT:
                index = self.index_of(handle)
                if code == _GPU_IS_LOST and index >= 0:
                    self.lost.add(index)
                where = f"GPU {index}" if index >= 0 else "a GPU"
                self._record(f"NVML error reading {where}: {exc}")
            return None  # no reading, whatever the reason; the reason is recorded above

    def read(self, index: int) -> GpuReading:
        lib, h, q = self.lib, self.handles[index], self._query
        util = q(lib.nvmlDeviceGetUtilizationRates, h)
        mem = q(lib.nvmlDeviceGetMemoryInfo, h)
        # Renamed in driver 535 ("throttle" became "event"); older pynvml has the old name.
        events = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        events = events or lib.nvmlDeviceGetCurrentClocksThrottleReasons
        power = q(lib.nvmlDeviceGetPowerUsage, h)
        energy = q(lib.nvmlDeviceGetTotalEnergyConsumption, h)
        return GpuReading(
            utilization=util.gpu / 100.0 if util is not None else None,
            memory_used_bytes=int(mem.used) if mem is not None else None,
            memory_total_bytes=int(mem.total) if mem is not None else None,
            sm_clock_mhz=_float(q(lambda h: lib.nvmlDeviceGetClockInfo(h, _SM_CLOCK), h)),
            power_w=power / 1000.0 if power is not None else None,  # NVML reports mW
            temperature_c=_float(q(lambda h: lib.nvmlDeviceGetTemperature(h, _GPU_TEMPERATURE), h)),
            clock_event_bits=_int(q(events, h)),
            ecc_uncorrected=_int(
                q(lambda h: lib.nvmlDeviceGetTotalEccErrors(h, _UNCORRECTED, _VOLATILE), h)
            ),
            ecc_corrected=_int(
                q(lambda h: lib.nvmlDeviceGetTotalEccErrors(h, _CORRECTED, _VOLATILE), h)
            ),
            pcie_replays=_int(q(lib.nvmlDeviceGetPcieReplayCounter, h)),
            energy_j=energy / 1000.0 if energy is not None else None,  # NVML reports mJ
        )

    def index_of(self, handle: Any) -> int:
        """The NVML index of a device handle, -1 if it is none of ours."""
        address = _address(handle)
        return self._addresses.index(address) if address in self._addresses else -1

    def _record(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    def xid_errors(self) -> list[tuple[int, int]]:
        """Critical XID events since the last call, as (device index, XID); [] if unreadable.

        Registering for events needs a driver that allows it (not all containers do). Waiting
        ends with NVML's "timeout" when no event is left: that alone means nothing happened;
        any other error (the GPU is lost, an unknown error) is recorded in :attr:`errors`.
        """
        lib = self.lib
        if self._events is None:
            try:
                self._events = lib.nvmlEventSetCreate()
                for h in self.handles:
                    lib.nvmlDeviceRegisterEvents(h, _XID_EVENT, self._events)
            except lib.NVMLError:
                self._events = False  # not readable here: stop asking
        if self._events is False:
            return []
        found: list[tuple[int, int]] = []
        try:
            while True:
                event = lib.nvmlEventSetWait_v2(self._events, 0)
                found.append((self.index_of(event.device), int(event.eventData)))
        except lib.NVMLError as exc:
            if _code(exc) != _TIMEOUT:  # not "no more events": something went wrong
                if _code(exc) == _GPU_IS_LOST:
                    self._record(f"NVML error reading XID events: {exc} (a GPU fell off the bus)")
                else:
                    self._record(f"NVML error reading XID events: {exc}")
            return found

    def close(self) -> None:
        try:
            if self._events:
                self.lib.nvmlEventSetFree(self._events)
            self.lib.nvmlShutdown()
        except self.lib.NVMLError:
            pass


def open_nvml(lib: Any = None) -> tuple[Nvml | None, str | None]:
    """NVML and no notice, or None and the one-line notice saying why GPUs go unmonitored."""
    if lib is None:
        try:
            import pynvml
        except ImportError:
            return (
                None,
                "GPU not monitored: nvidia-ml-py is not installed (pip install nvidia-ml-py)",
            )
        lib = pynvml
    try:
        nvml = Nvml(lib)
    except lib.NVMLError as exc:
        return None, f"GPU not monitored: NVML is unavailable here ({exc})"
    if not nvml.handles:
        nvml.close()
        return None, "GPU not monitored: NVML sees no GPU"
    return nvml, None


def _code(exc: BaseException) -> int | None:
    """NVML's return code of a pynvml error (None if it carries none)."""
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _address(handle: Any) -> Any:
    """What identifies a device handle. pynvml's handles are ctypes pointers, which compare as
    objects, and an event's handle is a new object for the same device: compare addresses."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except ctypes.ArgumentError:
        return handle


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def nvml_indices(device: str | None) -> list[int] | None:
    """The NVML indices of the GPUs a run uses ("GPU:1" -> [1], "GPU:0,GPU:1" -> [0, 1]);
    None (watch all) for a CPU run or an index TensorFlow numbers differently from NVML
    (CUDA_VISIBLE_DEVICES by UUID)."""
    names = [d.strip() for d in device.split(",")] if device else ["GPU:0"]
    if not all(d.upper().startswith("GPU:") for d in names):
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    order = [v.strip() for v in visible.split(",")] if visible else None
    indices = []
    try:  # by the one strict parser: CUDA_VISIBLE_DEVICES=² passed isdigit() and failed int()
        for name in names:
            tf_index = whole(name.split(":")[1], 0, MAX_DEVICES - 1)
            if order is None:
                indices.append(tf_index)
            elif tf_index < len(order):
                indices.append(whole(order[tf_index], 0, MAX_DEVICES - 1))
            else:
                return None
    except NotWhole:  # a UUID (GPU-8f3c...), MIG-..., or no index at all: watch every GPU
        return None
    return indices
