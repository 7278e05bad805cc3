"""The device monitor: NVML parsed from a recorded fake (no GPU here, and NVML has no CPU
equivalent to run instead), CPU sampled for real. Faults a recording cannot hold (a GPU lost
mid-run, an unknown NVML error, a library that raises) are planted in the fake."""

from __future__ import annotations

import itertools
import os
import time

import pytest

from gpuscout.diagnose.records import SoakConfig
from gpuscout.diagnose.soak import judge
from gpuscout.measure.monitor import Monitor, attach
from gpuscout.measure.monitor_warnings import monitor_warnings
from gpuscout.measure.nvml import Nvml, open_nvml
from tests.conftest import PATIENCE_S
from tests.diagnose.test_diagnose import STEADY, _raw
from tests.measure.fake_nvml import UNKNOWN, FakeNvml, NoDriver
from tests.store.test_store import _result


def test_nvml_layer_parses_the_recorded_fake_into_si_units() -> None:
    nvml = Nvml(FakeNvml())
    assert nvml.names == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"]
    assert nvml.max_sm_clock_mhz == [1980.0, 3120.0]
    assert nvml.power_limit_w == [700.0, 450.0]
    nvml.read(0)  # sample 0: idle
    busy = nvml.read(0)
    assert busy.utilization == pytest.approx(0.97)
    assert busy.power_w == pytest.approx(655.0)
    assert busy.energy_j == pytest.approx(900065.5)
    assert busy.memory_used_bytes == 60129542144
    geforce = nvml.read(1)
    assert geforce.ecc_uncorrected is None and geforce.pcie_replays is None  # not supported
    assert geforce.temperature_c == 30.0


def test_monitor_summarises_the_fake_gpus_and_warns_about_throttling_and_errors() -> None:
    mon = Monitor(nvml_lib=FakeNvml())
    mon.sample()  # warm-up, outside the window
    mon.begin_window("measured steps")
    for _ in range(5):
        mon.sample()
    mon.stop()
    s = mon.summary()
    assert s.window == "measured steps" and s.samples == 6  # 5 + stop()'s last reading
    h100, rtx = s.gpus
    assert h100.clock_events == ["hardware thermal slowdown", "software power cap"]
    assert h100.sm_clock_min_mhz == 1290.0 and h100.sm_clock_max_mhz == 1980.0
    assert h100.ecc_corrected == 1 and h100.ecc_uncorrected == 0
    assert h100.pcie_replays == 0
    assert h100.energy_j == pytest.approx((900312500 - 900065500) / 1000)
    assert h100.temperature_max_c == 91.0
    assert h100.xid_errors == [79]
    assert rtx.ecc_uncorrected is None and rtx.clock_events == ["software power cap"]
    warnings = " ".join(monitor_warnings(s))
    assert "GPU 0 throttled" in warnings and "hardware thermal slowdown" in warnings
    assert "dropped to 1290 MHz" in warnings
    assert "XID error(s) [79]" in warnings
    assert "GPU 1 throttled during the run (software power cap)" in warnings


def test_monitor_watches_only_the_gpus_asked_for() -> None:
    mon = Monitor(nvml_lib=FakeNvml(), gpus=[1])
    mon.sample()
    mon.stop()
    assert [g.name for g in mon.summary().gpus] == ["NVIDIA GeForce RTX 4090"]


def test_without_a_driver_the_gpu_part_is_skipped_with_one_notice() -> None:
    nvml, notice = open_nvml(NoDriver())
    assert nvml is None and notice is not None and "NVML is unavailable" in notice
    mon = Monitor(nvml_lib=NoDriver())
    mon.sample()
    mon.stop()
    s = mon.summary()
    assert s.gpus == [] and len(s.notices) == 1
    assert s.process_rss_max_bytes and s.process_rss_max_bytes > 10 * 2**20  # this process
    assert s.cpu_cores == os.cpu_count() == len(s.cpu_per_core_mean)


def test_the_real_nvml_library_on_a_gpu_less_machine_is_skipped_cleanly() -> None:
    nvml, notice = open_nvml()
    if nvml is not None:  # a machine with an NVIDIA driver: nothing to skip
        nvml.close()
        pytest.skip("NVML works on this machine")
    assert notice is not None and notice.startswith("GPU not monitored")


def test_memory_stays_bounded_over_a_long_sampling_and_covers_the_whole_run() -> None:
    now = [0.0]
    mon = Monitor(nvml_lib=FakeNvml(), max_samples=100, clock=lambda: now[0])
    for _ in range(20_000):  # 33 minutes at 10 Hz
        now[0] += 0.1
        mon.sample()
    t = mon.timeline_columns()["t"]
    assert len(t) < 100
    assert t[0] <= 1.0 and t[-1] >= 1900.0  # start and end both kept
    gaps = {round(b - a, 3) for a, b in itertools.pairwise(t)}
    assert len(gaps) == 1  # evenly spaced after thinning
    assert all(len(col) == len(t) for col in mon.timeline_columns().values())
    assert mon.summary().samples == 20_000  # the summary still covers every sample


def test_the_background_thread_samples_and_stops() -> None:
    mon = Monitor(hz=50, nvml_lib=NoDriver()).start()
    deadline = time.monotonic() + PATIENCE_S
    while mon.summary().samples == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    mon.stop()
    assert mon.summary().samples > 0
    assert mon._thread is None


def test_the_xid_reader_takes_only_timeout_as_nothing_happened() -> None:
    quiet = Nvml(FakeNvml())
    assert quiet.xid_errors() == [] and quiet.errors == {}  # "Timeout": no event waiting
    broken = Nvml(FakeNvml(event_error=UNKNOWN))
    assert broken.xid_errors() == [] and broken.xid_errors() == []
    assert broken.errors == {"NVML error reading XID events: Unknown Error": 2}


def test_xids_are_matched_to_their_gpu_by_address_not_by_handle_object() -> None:
    # The fake, like pynvml, gives an event a new handle object for the same device.
    nvml = Nvml(FakeNvml())
    for _ in range(4):  # the recording plants XID 79 on GPU 0 after sample 3
        nvml.read(0)
    assert nvml.xid_errors() == [(0, 79)]


def test_a_gpu_lost_mid_run_is_recorded_warned_and_fails_a_soak() -> None:
    mon = Monitor(nvml_lib=FakeNvml(lost_from={0: 3}))
    for _ in range(5):
        mon.sample()
    mon.stop()
    s = mon.summary()
    h100, rtx = s.gpus
    assert h100.lost and not rtx.lost
    assert "NVML error reading GPU 0: GPU is lost (30 times)" in s.errors  # 10 queries x 3
    assert "NVML error reading XID events: GPU is lost (a GPU fell off the bus) (3 times)" in (
        s.errors
    )
    warnings = monitor_warnings(s)
    assert any(w.startswith("GPU 0 was lost during the run") for w in warnings)
    assert not any(w.startswith("GPU 1 was lost") for w in warnings)
    assert "device monitor: NVML error reading GPU 0: GPU is lost (30 times)." in warnings
    soak = judge(_raw(STEADY, STEADY), SoakConfig(minutes=1), s)
    assert soak.verdict == "fail"
    assert "GPU 0: lost during the soak (NVML: GPU is lost)" in soak.reasons
    assert any(e.startswith("warning: GPU 0 was lost") for e in soak.evidence)


def test_a_sampling_thread_that_dies_leaves_its_exception_on_the_run() -> None:
    mon = Monitor(hz=50, nvml_lib=FakeNvml(crash_at=3)).start()
    assert mon._thread is not None
    mon._thread.join(timeout=PATIENCE_S)  # it dies on its fourth sample
    assert not mon._thread.is_alive()
    run = attach(_result(), mon)  # stops the monitor: no exception escapes
    assert run.monitor is not None and run.monitor.samples == 3
    died = run.monitor.errors[0]
    assert died.startswith("the device monitor stopped") and "s into the run" in died
    assert "(RuntimeError: planted: the library broke)" in died
    assert f"device monitor: {died}." in run.warnings
