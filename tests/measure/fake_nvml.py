"""A stand-in for the ``pynvml`` module that replays tests/data/nvml_recording.json.

A fake because NVML needs an NVIDIA driver and GPU, and the test machines have neither. It has
the module's function names, argument order, return shapes and units, and raises its error
classes for queries a device does not support, so the layer under test cannot tell it apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

RECORDING = Path(__file__).parents[1] / "data" / "nvml_recording.json"


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # (pynvml's name)
    pass


class NVMLError_Timeout(NVMLError):
    pass


class FakeNvml:
    """``FakeNvml()`` is used where the ``pynvml`` module would be."""

    NVMLError = NVMLError

    def __init__(self, path: Path = RECORDING) -> None:
        self.devices = json.loads(path.read_text())["devices"]
        self.cursor = [-1] * len(self.devices)
        self.pending: list[tuple[int, int]] = []
        self.initialised = False

    def nvmlInit(self) -> None:
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return str(self.devices[h]["name"])

    def nvmlDeviceGetMaxClockInfo(self, h: int, clock: int) -> int:
        assert clock == 1  # NVML_CLOCK_SM
        return int(self.devices[h]["max_sm_clock_mhz"])

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return int(self.devices[h]["power_limit_mw"])

    def _now(self, h: int, key: str) -> Any:
        samples = self.devices[h]["samples"]
        value = samples[min(self.cursor[h], len(samples) - 1)][key]
        if value is None:
            raise NVMLError_NotSupported("Not Supported")
        return value

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        self.cursor[h] += 1  # the layer reads utilisation first: a new sample starts
        xid = self.devices[h]["xid_after_sample"].get(str(self.cursor[h]))
        if xid is not None:
            self.pending.append((h, xid))
        return SimpleNamespace(gpu=self._now(h, "util"), memory=0)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(used=self._now(h, "mem_used"), total=self._now(h, "mem_total"))

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return int(self._now(h, "sm_clock"))

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return int(self._now(h, "power_mw"))

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return int(self._now(h, "temp"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return int(self._now(h, "events"))

    def nvmlDeviceGetTotalEccErrors(self, h: int, error_type: int, counter: int) -> int:
        return int(self._now(h, "ecc_unc" if error_type == 1 else "ecc_cor"))

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> int:
        return int(self._now(h, "replay"))

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return int(self._now(h, "energy_mj"))

    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlDeviceRegisterEvents(self, h: int, types: int, event_set: str) -> None:
        assert types == 8  # nvmlEventTypeXidCriticalError

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> SimpleNamespace:
        if not self.pending:
            raise NVMLError_Timeout("Timeout")
        h, xid = self.pending.pop(0)
        return SimpleNamespace(device=h, eventData=xid)

    def nvmlEventSetFree(self, event_set: str) -> None:
        return None


class NoDriver:
    """``pynvml`` on a machine without the NVIDIA driver: nvmlInit fails."""

    NVMLError = NVMLError

    def nvmlInit(self) -> None:
        raise NVMLError("NVML Shared Library Not Found")
