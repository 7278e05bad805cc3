"""Energy of the measured steps: the RAPL reader on a sysfs tree built in ``tmp_path`` (a real
directory tree, the reader's real input, its root passed as a parameter), the GPU path through
the recorded fake NVML (a fake: no GPU here, and NVML has no CPU equivalent), the window placed
from the child's progress anchors, the stored record and its line in the table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuscout.core.records import BenchConfig, Energy, RunResult, StepTimes, Warmup
from gpuscout.measure.energy import NVML_COUNTER, NVML_POWER, integral, step_end
from gpuscout.measure.monitor import Monitor, attach
from gpuscout.measure.rapl import AMD_ENERGY, RAPL_PACKAGE, PackageMeter, open_rapl
from gpuscout.report.terminal import energy_text, result_table
from tests.measure.fake_nvml import RECORDING, FakeNvml, NoDriver
from tests.store.test_store import _result

STEP_S = 0.5  # every step of the runs below: the child's protocol starts at monitor time 1.0
TIMES = [STEP_S] * 12
# (received at, steps done, child's elapsed): one message arrives late, which must not move
# the clock mapping (the earliest receipt minus elapsed is the offset: 1.0).
ANCHORS = [(2.05, 2, 1.0), (4.0, 6, 3.0), (6.2, 10, 5.0)]


def _domain(root: Path, name: str, label: str, uj: int | None, wrap: int = 10**9) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "name").write_text(label + "\n")
    (d / "max_energy_range_uj").write_text(f"{wrap}\n")
    if uj is not None:
        (d / "energy_uj").write_text(f"{uj}\n")
    return d


def _sysfs(root: Path) -> Path:
    """Two packages, the sub-domains of the first and a platform domain (psys): only the
    packages may be counted, or energy is counted twice."""
    powercap = root / "powercap"
    _domain(powercap, "intel-rapl:0", "package-0", 5_000_000)
    _domain(powercap, "intel-rapl:0:0", "core", 4_000_000)
    _domain(powercap, "intel-rapl:0:1", "dram", 1_000_000)
    _domain(powercap, "intel-rapl:1", "package-1", 7_000_000)
    _domain(powercap, "intel-rapl:2", "psys", 9_000_000)
    (powercap / "intel-rapl").mkdir()  # the control type's own directory: no counter
    return powercap


def _set(powercap: Path, domain: str, uj: int) -> None:
    (powercap / domain / "energy_uj").write_text(f"{uj}\n")


def test_rapl_counts_package_domains_only_and_handles_wrap_around(tmp_path: Path) -> None:
    powercap = _sysfs(tmp_path)
    rapl, why = open_rapl(powercap, tmp_path / "hwmon")
    assert rapl is not None and why is None and rapl.source == RAPL_PACKAGE
    assert [c.name for c in rapl.counters] == ["package-0", "package-1"]
    assert rapl.read() == {"package-0": 0.0, "package-1": 0.0}
    _set(powercap, "intel-rapl:0", 8_000_000)
    _set(powercap, "intel-rapl:0:0", 9_999_999)  # a sub-domain moving changes nothing
    _set(powercap, "intel-rapl:1", 7_500_000)
    assert rapl.read() == pytest.approx({"package-0": 3.0, "package-1": 0.5})
    _set(powercap, "intel-rapl:0", 999_000_000)
    assert rapl.read()["package-0"] == pytest.approx(3.0 + 991.0)
    _set(powercap, "intel-rapl:0", 2_000_000)  # wrapped at 10**9 uJ since the last read
    assert rapl.read()["package-0"] == pytest.approx(3.0 + 991.0 + 1.0 + 2.0)


def test_rapl_says_why_when_missing_or_unreadable(tmp_path: Path) -> None:
    rapl, why = open_rapl(tmp_path / "none", tmp_path / "none")
    assert rapl is None and why is not None
    assert why.startswith(f"no {tmp_path / 'none'}: no powercap driver here")
    (tmp_path / "empty").mkdir()
    assert open_rapl(tmp_path / "empty", tmp_path / "none")[1] == (
        f"no RAPL package domain (intel-rapl:N named package-*) under {tmp_path / 'empty'}"
    )
    broken = _domain(tmp_path / "pc", "intel-rapl:0", "package-0", None)
    (broken / "energy_uj").mkdir()  # unreadable as a file, whoever runs the test
    assert open_rapl(tmp_path / "pc", tmp_path / "none") == (
        None,
        f"{broken / 'energy_uj'}: Is a directory",
    )
    (broken / "energy_uj").rmdir()
    (broken / "energy_uj").write_text("n/a\n")
    assert open_rapl(tmp_path / "pc", tmp_path / "none")[1] == (
        f"{broken / 'energy_uj'}: not a counter ('n/a')"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_rapl_root_only_counter_names_the_fix(tmp_path: Path) -> None:
    d = _domain(tmp_path, "intel-rapl:0", "package-0", 1)
    (d / "energy_uj").chmod(0)
    why = open_rapl(tmp_path, tmp_path / "none")[1]
    assert why is not None and "permission denied (readable by root only since Linux 5.10" in why
    assert f"sudo chmod o+r {d / 'energy_uj'}" in why


def test_a_counter_that_fails_mid_run_stops_reading_and_keeps_why(tmp_path: Path) -> None:
    powercap = _sysfs(tmp_path)
    meter = PackageMeter(powercap, tmp_path / "hwmon")
    assert meter.readable and meter.read() == {"package-0": 0.0, "package-1": 0.0}
    (powercap / "intel-rapl:1" / "energy_uj").unlink()
    assert meter.read() == {} and not meter.readable
    assert meter.reason == f"{powercap / 'intel-rapl:1' / 'energy_uj'}: No such file or directory"


def test_amd_energy_sockets_are_read_where_powercap_has_none(tmp_path: Path) -> None:
    mon = tmp_path / "hwmon" / "hwmon3"
    mon.mkdir(parents=True)
    (mon / "name").write_text("amd_energy\n")
    for i, (label, uj) in enumerate([("Ecore000", 10), ("Esocket0", 1_000_000)], start=1):
        (mon / f"energy{i}_label").write_text(label + "\n")
        (mon / f"energy{i}_input").write_text(f"{uj}\n")
    rapl, _ = open_rapl(tmp_path / "none", tmp_path / "hwmon")
    assert rapl is not None and rapl.source == AMD_ENERGY
    (mon / "energy2_input").write_text("3000000\n")
    assert rapl.read() == {"socket 0": pytest.approx(2.0)}


def test_the_window_edges_come_from_the_anchors_and_the_step_times() -> None:
    assert step_end(ANCHORS, TIMES, 3) == pytest.approx(2.5)  # from the anchor at step 2
    assert step_end(ANCHORS, TIMES, 9) == pytest.approx(5.5)  # back from the one at step 10
    assert step_end(ANCHORS, TIMES, 0) == pytest.approx(1.0)
    assert integral([(0.0, 10.0), (2.0, 20.0)], 0.5, 1.5) == pytest.approx(15.0)


def _monitor(
    lib: object, gpus: list[int] | None, rapl: tuple[Path, Path] | None = None, hz: float = 10
) -> Monitor:
    """A monitor sampled at monitor times 1..6, with the child's anchors (``hz`` is only what
    it says its interval is: the samples are taken here, by hand)."""
    now = [0.0]
    roots = rapl or (Path("/nonexistent/powercap"), Path("/nonexistent/hwmon"))
    mon = Monitor(nvml_lib=lib, gpus=gpus, clock=lambda: now[0], rapl=roots, hz=hz)
    for t in range(1, 7):
        now[0] = float(t)
        mon.sample()
        for received, steps, elapsed in ANCHORS:
            if t - 1 < received <= t:
                mon.step_progress(steps, elapsed)
    now[0] = 6.5
    return mon


def _run(device: str, workload: str = "mlp", dims: dict[str, int] | None = None) -> RunResult:
    """Warm-up of 3 steps, 6 measured: monitor times 2.5 to 5.5."""
    return _result().model_copy(
        update={
            "device": device,
            "batch_size": 64,
            "workload": workload,
            "config": BenchConfig(workload=workload, dims=dims or {}),
            "warmup": Warmup(steps=3, seconds=1.5, method="fixed"),
            "measured_steps": 6,
            "step_times_s": TIMES,
        }
    )


def test_gpu_energy_from_nvml_total_energy_counter_over_the_measured_steps() -> None:
    run = attach(_run("GPU:0,GPU:1"), _monitor(FakeNvml(), None))
    e = run.energy
    assert e is not None and e.source == NVML_COUNTER and e.reason is None
    h100 = 900279.5 - 900100.0  # the recorded counters, interpolated at 2.5 s and 5.5 s
    rtx = (50175300 + 50219400) / 2e3 - (50043000 + 50087000) / 2e3
    assert [d.joules for d in e.devices] == [pytest.approx(h100), pytest.approx(rtx)]
    assert e.devices[0].device == "GPU 0 (NVIDIA H100 80GB HBM3)"
    assert e.joules == pytest.approx(h100 + rtx) and e.seconds == pytest.approx(3.0)
    assert e.joules_per_step == pytest.approx((h100 + rtx) / 6)
    assert e.joules_per_sample == pytest.approx((h100 + rtx) / (6 * 64))
    assert e.joules_per_token is None  # the MLP has no tokens
    line = energy_text(e)
    assert line.startswith("812 mJ per sample (1.23 samples/J), from nvml total energy · 312 J ")
    assert "over the measured 3 s (GPU 0 (NVIDIA H100 80GB HBM3) 180 J, GPU 1 (" in line


def test_gpu_without_the_counter_integrates_power_and_says_so(tmp_path: Path) -> None:
    recording = json.loads(RECORDING.read_text())
    for sample in recording["devices"][0]["samples"]:
        sample["energy_mj"] = None  # a GPU before Volta: NVML answers "not supported"
    path = tmp_path / "recording.json"
    path.write_text(json.dumps(recording))
    e = attach(_run("GPU:0"), _monitor(FakeNvml(path), [0])).energy
    assert e is not None and e.source == NVML_POWER and e.devices[0].source == NVML_POWER
    # 672.5 W at 2.5 s, the samples at 3, 4 and 5 s, 650 W at 5.5 s: trapezoids
    assert e.joules == pytest.approx(340.625 + 585 + 560 + 322.5)


def test_cpu_energy_from_rapl_packages_and_per_token_for_a_sequence_model(tmp_path: Path) -> None:
    powercap = _sysfs(tmp_path)
    now = [0.0]
    mon = Monitor(nvml_lib=NoDriver(), clock=lambda: now[0], rapl=(powercap, tmp_path / "hw"))
    for t in range(1, 7):  # package 0 draws 10 W, package 1 5 W, from the last reading
        now[0] = float(t)
        _set(powercap, "intel-rapl:0", 5_000_000 + 10_000_000 * t)
        _set(powercap, "intel-rapl:1", 7_000_000 + 5_000_000 * t)
        mon.sample()
        for received, steps, elapsed in ANCHORS:
            if t - 1 < received <= t:
                mon.step_progress(steps, elapsed)
    now[0] = 6.5
    e = attach(_run("CPU:0", "bert-base", {"seq_len": 32}), mon).energy
    assert e is not None and e.source == RAPL_PACKAGE
    assert {d.device: d.joules for d in e.devices} == pytest.approx(
        {"package-0": 30.0, "package-1": 15.0}
    )
    assert e.joules_per_sample == pytest.approx(45.0 / 384)
    assert e.joules_per_token == pytest.approx(45.0 / 384 / 32)
    assert "per token (" in energy_text(e) and "tokens/J)" in energy_text(e)


def test_a_counter_that_never_moves_is_not_reported_as_zero_joules(tmp_path: Path) -> None:
    """A virtual machine can expose RAPL files whose counters stay put: zero joules over steps
    that kept a package busy is not a measurement. NVML's total-energy counter stuck the same
    way falls back to integrating power, as on a GPU without the counter."""
    powercap = _sysfs(tmp_path)
    e = attach(_run("CPU:0"), _monitor(NoDriver(), None, (powercap, tmp_path / "hw"))).energy
    assert e is not None and e.joules is None and e.reason is not None
    assert "package-0's counter did not move over the measured steps" in e.reason
    recording = json.loads(RECORDING.read_text())
    for sample in recording["devices"][0]["samples"]:
        sample["energy_mj"] = 123_456  # answered, never moving
    path = tmp_path / "recording.json"
    path.write_text(json.dumps(recording))
    gpu = attach(_run("GPU:0"), _monitor(FakeNvml(path), [0])).energy
    assert gpu is not None and gpu.source == NVML_POWER
    assert gpu.joules == pytest.approx(340.625 + 585 + 560 + 322.5)


def test_not_reported_says_why_in_one_line(tmp_path: Path) -> None:
    none = tmp_path / "none"
    e = attach(_run("CPU:0"), _monitor(NoDriver(), None, (none, none))).energy
    assert e is not None and e.source is None and e.joules is None
    assert energy_text(e) == (
        f"not reported (RAPL not readable here: no {none}: no powercap driver here (a VM or "
        "container that hides it, a kernel without it, or a CPU without RAPL))"
    )
    gpu = attach(_run("GPU:0"), _monitor(NoDriver(), None)).energy
    assert gpu is not None and gpu.reason is not None
    assert gpu.reason.startswith("GPU not monitored: NVML is unavailable here")
    unanchored = Monitor(nvml_lib=FakeNvml(), gpus=[0])  # an in-process run: no child messages
    unanchored.sample()
    e = attach(_run("GPU:0"), unanchored).energy
    assert e is not None and e.reason is not None and "did not see the measured steps" in e.reason
    short = _run("GPU:0").model_copy(update={"measured_steps": 3})  # 1.5 s, samples 1 s apart
    e = attach(short, _monitor(FakeNvml(), [0], hz=1)).energy
    assert e is not None and e.reason == (
        "the measured steps lasted 1.5 s, under 2 of the monitor's samples: measure longer "
        "(--seconds)"
    )


def test_energy_is_stored_shown_and_old_runs_load_unchanged() -> None:
    old = _result().to_json_dict()
    old.pop("energy")
    assert RunResult.model_validate(old).energy is None  # a run stored before energy
    run = _result().model_copy(
        update={
            "energy": Energy(source=RAPL_PACKAGE, joules=12.0, joules_per_sample=0.002),
            "warmup": Warmup(steps=1, seconds=0.1, method="fixed"),
            "step_time_s": StepTimes(median=0.01, p5=0.01, p95=0.01, mean=0.01),
        }
    )
    back = RunResult.model_validate(json.loads(json.dumps(run.to_json_dict())))
    assert back.energy == run.energy
    assert "2.00 mJ per sample (500 samples/J), from rapl package" in energy_text(run.energy)
    table = result_table(back)
    assert any("2.00 mJ per sample" in str(cell) for cell in table.columns[1].cells)


def test_stop_takes_one_last_reading_of_the_cpu_counters(tmp_path: Path) -> None:
    """Without NVML, the last reading on stop is what covers the end of the measured steps."""
    mon = Monitor(nvml_lib=NoDriver(), rapl=(_sysfs(tmp_path), tmp_path / "hw"))
    mon.stop()
    mon.stop()  # idempotent: no second reading
    assert len(mon.energy_log.samples) == 1 and mon.summary().samples == 1
    assert mon.energy_log.samples[0][1] == {"cpu.package-0": 0.0, "cpu.package-1": 0.0}
