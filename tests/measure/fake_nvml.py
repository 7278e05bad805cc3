"""A stand-in for the ``pynvml`` module that replays tests/data/nvml_recording.json.

A fake because NVML needs an NVIDIA driver and GPU, and the test machines have neither (and
NVML has no CPU equivalent to run for real). It has the module's function names, argument order,
return shapes and units, and raises its error classes, carrying NVML's return code as ``value``
like pynvml's, for queries a device does not support, so the layer under test cannot tell it
apart. Faults no recording can hold are planted: a GPU that falls off the bus, an unknown error
from the event wait, a library that raises something unexpected.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

RECORDING = Path(__file__).parents[1] / "data" / "nvml_recording.json"

# pynvml's device handles are ctypes pointers, and each call (an event's too) returns a new
# pointer object for the same device: two handles of one GPU are equal only by address.
Handle = ctypes.c_void_p
_BASE, _STRIDE = 0x7F0000001000, 0x100


def _handle(index: int) -> Handle:
    return ctypes.c_void_p(_BASE + _STRIDE * index)


def _dev(handle: Handle) -> int:
    assert isinstance(handle, ctypes.c_void_p) and handle.value is not None
    return (handle.value - _BASE) // _STRIDE


# NVML return codes (nvml.h) and pynvml's strings for them.
NOT_SUPPORTED, TIMEOUT, LIBRARY_NOT_FOUND, GPU_IS_LOST, UNKNOWN = 3, 10, 12, 15, 999
_STRINGS = {
    NOT_SUPPORTED: "Not Supported",
    TIMEOUT: "Timeout",
    LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    GPU_IS_LOST: "GPU is lost",
    UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    """pynvml's error: ``value`` is NVML's return code, ``str()`` its text."""

    def __init__(self, value: int) -> None:
        super().__init__(_STRINGS[value])
        self.value = value


class NVMLError_NotSupported(NVMLError):  # (pynvml's name)
    def __init__(self) -> None:
        super().__init__(NOT_SUPPORTED)


class NVMLError_Timeout(NVMLError):
    def __init__(self) -> None:
        super().__init__(TIMEOUT)


class NVMLError_GpuIsLost(NVMLError):
    def __init__(self) -> None:
        super().__init__(GPU_IS_LOST)


class FakeNvml:
    """``FakeNvml()`` is used where the ``pynvml`` module would be.

    Planted faults: ``lost_from={device: sample}``: from that sample on, every query of the
    device answers "GPU is lost" and so does the event wait; ``event_error``: the event wait
    fails with that NVML code instead of "timeout"; ``crash_at``: the utilisation query of that
    sample raises a plain RuntimeError (a bug below NVML, not an NVML answer).
    """

    NVMLError = NVMLError

    def __init__(
        self,
        path: Path = RECORDING,
        lost_from: dict[int, int] | None = None,
        event_error: int | None = None,
        crash_at: int | None = None,
    ) -> None:
        self.devices = json.loads(path.read_text())["devices"]
        self.cursor = [-1] * len(self.devices)
        self.pending: list[tuple[int, int]] = []
        self.initialised = False
        self.lost_from = lost_from or {}
        self.event_error = event_error
        self.crash_at = crash_at

    def _is_lost(self, h: int) -> bool:
        return h in self.lost_from and self.cursor[h] >= self.lost_from[h]

    def nvmlInit(self) -> None:
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Handle:
        return _handle(i)

    def nvmlDeviceGetName(self, handle: Handle) -> str:
        h = _dev(handle)
        return str(self.devices[h]["name"])

    def nvmlDeviceGetMaxClockInfo(self, handle: Handle, clock: int) -> int:
        h = _dev(handle)
        assert clock == 1  # NVML_CLOCK_SM
        return int(self.devices[h]["max_sm_clock_mhz"])

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Handle) -> int:
        h = _dev(handle)
        return int(self.devices[h]["power_limit_mw"])

    def _now(self, h: int, key: str) -> Any:
        if self._is_lost(h):
            raise NVMLError_GpuIsLost()
        samples = self.devices[h]["samples"]
        value = samples[min(self.cursor[h], len(samples) - 1)][key]
        if value is None:
            raise NVMLError_NotSupported()
        return value

    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> SimpleNamespace:
        h = _dev(handle)
        self.cursor[h] += 1  # the layer reads utilisation first: a new sample starts
        if self.crash_at is not None and self.cursor[h] >= self.crash_at:
            raise RuntimeError("planted: the library broke")
        xid = self.devices[h]["xid_after_sample"].get(str(self.cursor[h]))
        if xid is not None:
            self.pending.append((h, xid))
        return SimpleNamespace(gpu=self._now(h, "util"), memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: Handle) -> SimpleNamespace:
        h = _dev(handle)
        return SimpleNamespace(used=self._now(h, "mem_used"), total=self._now(h, "mem_total"))

    def nvmlDeviceGetClockInfo(self, handle: Handle, clock: int) -> int:
        h = _dev(handle)
        return int(self._now(h, "sm_clock"))

    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:
        h = _dev(handle)
        return int(self._now(h, "power_mw"))

    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:
        h = _dev(handle)
        return int(self._now(h, "temp"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Handle) -> int:
        h = _dev(handle)
        return int(self._now(h, "events"))

    def nvmlDeviceGetTotalEccErrors(self, handle: Handle, error_type: int, counter: int) -> int:
        h = _dev(handle)
        return int(self._now(h, "ecc_unc" if error_type == 1 else "ecc_cor"))

    def nvmlDeviceGetPcieReplayCounter(self, handle: Handle) -> int:
        h = _dev(handle)
        return int(self._now(h, "replay"))

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Handle) -> int:
        h = _dev(handle)
        return int(self._now(h, "energy_mj"))

    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlDeviceRegisterEvents(self, handle: Handle, types: int, event_set: str) -> None:
        _dev(handle)  # a handle of ours
        assert types == 8  # nvmlEventTypeXidCriticalError

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> SimpleNamespace:
        if any(self._is_lost(h) for h in range(len(self.devices))):
            raise NVMLError_GpuIsLost()
        if self.event_error is not None:
            raise NVMLError(self.event_error)
        if not self.pending:
            raise NVMLError_Timeout()
        h, xid = self.pending.pop(0)
        return SimpleNamespace(device=_handle(h), eventData=xid)

    def nvmlEventSetFree(self, event_set: str) -> None:
        return None


class NoDriver:
    """``pynvml`` on a machine without the NVIDIA driver: nvmlInit fails."""

    NVMLError = NVMLError

    def nvmlInit(self) -> None:
        raise NVMLError(LIBRARY_NOT_FOUND)
