"""Data-parallel settings, batches, ports and the efficiency interval: pure, no TensorFlow."""

from __future__ import annotations

import math
import socket

import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, Interval, RunResult, WorkerRun
from gpuscout.measure.nvml import nvml_indices
from gpuscout.scale import distribute
from gpuscout.scale.launch import combine
from gpuscout.scale.sweep import sweep_configs


def test_devices_are_a_count_or_names_of_one_kind() -> None:
    assert distribute.parse_devices("2") == 2
    assert distribute.parse_devices("cpu:0, cpu:1") == ("CPU:0", "CPU:1")
    for bad, says in [
        ("0", "no device"),
        ("GPU:0,CPU:1", "mixes"),
        ("GPU:0,GPU:0", "twice"),
        ("TPU:0", "neither"),
        ("two", "neither"),
        ("CPU:0,CPU:1024", "CPU:1024 is beyond the 1,024 devices"),
    ]:
        with pytest.raises(UserError, match=says):
            distribute.parse_devices(bad)


def test_plan_rejects_settings_that_do_not_go_together() -> None:
    assert distribute.plan(BenchConfig()).strategy is None
    mirrored = distribute.plan(BenchConfig(devices="CPU:0,CPU:1"))
    assert (mirrored.strategy, mirrored.names) == (distribute.MIRRORED, ("CPU:0", "CPU:1"))
    worker = distribute.plan(BenchConfig(workers=["a:1", "b:2"], task_index=1))
    assert (worker.strategy, worker.is_chief) == (distribute.MULTI_WORKER, False)
    for config, says in [
        (BenchConfig(devices="2", workers=["a:1"], task_index=0), "one or the other"),
        (BenchConfig(devices="2", loop="fit"), "--loop fit"),
        (BenchConfig(devices="2", xla=True), "--xla"),
        (BenchConfig(devices="2", model="m.py:f", data="d.py:f"), "--data"),
        (BenchConfig(devices="2", device="CPU:0"), "--device and --devices"),
        (BenchConfig(devices="2", batch_size=8, global_batch_size=16), "not both"),
        (BenchConfig(global_batch_size=16), "needs --devices"),
        (BenchConfig(task_index=0), "needs --workers"),
        (BenchConfig(workers=["a:1", "b:2"], task_index=2), "--task-index 2"),
        (BenchConfig(workers=["a:1", "b:2"]), "--task-index None"),
        (BenchConfig(workers=["a:1", "a:1"], task_index=0), "twice"),
        (BenchConfig(workers=["a", "b:2"], task_index=0), "not host:port"),
        (BenchConfig(workers=["a:70000"], task_index=0), "not host:port"),
    ]:
        with pytest.raises(UserError, match=says):
            distribute.plan(config)


def test_jax_splits_the_host_into_the_cpu_devices_a_run_names_before_jax_starts() -> None:
    jax = distribute.plan(BenchConfig(backend="jax", devices="2"))
    assert (jax.strategy, jax.count) == (distribute.JAX_SHARDING, 2)
    assert distribute.plan(BenchConfig(backend="jax", devices="2", xla=True)).count == 2
    assert distribute.host_devices(BenchConfig(backend="jax", devices="3")) == 3
    assert distribute.host_devices(BenchConfig(backend="jax", devices="CPU:0,CPU:2")) == 3
    for config in (
        BenchConfig(backend="jax", devices="1"),
        BenchConfig(backend="jax", devices="GPU:0,GPU:1"),
        BenchConfig(backend="jax"),
        BenchConfig(devices="2"),  # TensorFlow splits its CPU itself, after it starts
    ):
        assert distribute.host_devices(config) is None, config
    flag = distribute.HOST_DEVICES_FLAG
    mine = f"--xla_dump_to=/tmp/x {flag}=8 plain=word"
    assert distribute.with_host_devices(mine, 2) == f"{flag}=2 --xla_dump_to=/tmp/x plain=word"
    assert distribute.with_host_devices("", 4) == f"{flag}=4"


def test_the_batch_is_per_replica_or_split_evenly_from_the_global_one() -> None:
    assert distribute.batches(BenchConfig(devices="2", batch_size=8), 2, 99) == (8, 16)
    assert distribute.batches(BenchConfig(devices="2"), 4, 32) == (32, 128)
    assert distribute.batches(BenchConfig(devices="2", global_batch_size=12), 3, 99) == (4, 12)
    with pytest.raises(UserError, match="does not split evenly over 4 replicas"):
        distribute.batches(BenchConfig(devices="4", global_batch_size=10), 4, 99)


def test_efficiency_is_throughput_per_device_against_the_base_with_a_log_interval() -> None:
    base = Interval(median=100.0, ci_low=90.0, ci_high=110.0)
    run = Interval(median=180.0, ci_low=171.0, ci_high=189.0)
    e = distribute.efficiency(base, 1, run, 2)
    assert e.median == pytest.approx(0.9)
    # the run's low side and the base's high side make the efficiency low, and so on
    down = math.hypot(math.log(180 / 171), math.log(110 / 100))
    up = math.hypot(math.log(189 / 180), math.log(100 / 90))
    assert e.ci_low == pytest.approx(0.9 * math.exp(-down))
    assert e.ci_high == pytest.approx(0.9 * math.exp(up))
    assert distribute.efficiency(base, 2, run, 4).median == pytest.approx(0.9)  # base count 2
    unknown = distribute.efficiency(Interval(median=1.0, ci_low=None, ci_high=None), 1, run, 2)
    assert unknown.ci_low is None and unknown.median == pytest.approx(90.0)


def test_a_port_in_use_on_this_machine_is_caught_before_tensorflow() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UserError, match=f"port {port} of worker 127.0.0.1:{port} is already"):
            distribute.check_port_free(f"127.0.0.1:{port}")
    distribute.check_port_free("10.255.255.1:1")  # another machine's port: not ours to check
    ports = distribute.free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        distribute.check_port_free(f"localhost:{port}")


def test_a_sweep_runs_on_the_first_n_devices_and_stays_within_them() -> None:
    configs = sweep_configs(BenchConfig(devices="GPU:2,GPU:5,GPU:7"), [1, 3])
    assert [c.devices for c in configs] == ["GPU:2", "GPU:2,GPU:5,GPU:7"]
    assert [c.devices for c in sweep_configs(BenchConfig(), [1, 2])] == ["1", "2"]
    with pytest.raises(UserError, match="beyond the 2 device"):
        sweep_configs(BenchConfig(devices="2"), [1, 4])
    with pytest.raises(UserError, match="does not split evenly over 3"):
        sweep_configs(BenchConfig(devices="4", global_batch_size=8), [1, 2, 3])
    with pytest.raises(UserError, match="--scaling with --workers"):
        sweep_configs(BenchConfig(workers=["a:1"], task_index=0), [1])
    with pytest.raises(UserError, match="not a list of device counts"):
        distribute.parse_counts("1,x")
    assert distribute.parse_counts("4,1,2,2") == [1, 2, 4]


def test_the_monitor_watches_every_gpu_of_a_data_parallel_run() -> None:
    assert nvml_indices("GPU:0,GPU:1") == [0, 1]
    assert distribute.monitored(BenchConfig(devices="3")) == "GPU:0,GPU:1,GPU:2"
    assert distribute.monitored(BenchConfig(devices="CPU:0,CPU:1")) == "CPU:0,CPU:1"
    assert nvml_indices("CPU:0,CPU:1") is None


def _worker(i: int, status: str, exited: float, message: str | None = None) -> WorkerRun:
    return WorkerRun(
        task_index=i,
        address=f"127.0.0.1:{1000 + i}",
        status=status,  # type: ignore[arg-type]
        message=message,
        exited_after_s=exited,
    )


def test_a_launched_run_names_the_worker_that_failed_first() -> None:
    config = BenchConfig(workers=["127.0.0.1:1000", "127.0.0.1:1001"], task_index=0)
    chief = RunResult(
        created_at="2026-01-01T00:00:00+00:00",
        status="error",
        message="collective aborted",
        workload="mlp",
        device="2 workers x CPU:0",
        precision="fp32",
        xla=False,
        loop="custom",
        batch_size=0,
        config=config,
    )
    reports = [
        _worker(0, "error", 9.0, "collective aborted"),
        _worker(1, "error", 2.0, "exited with code 3"),
    ]
    result = combine(config, chief, reports)
    assert result.status == "error"
    assert result.message is not None and result.message.startswith("worker 1 (127.0.0.1:1001)")
    assert result.distribution is not None and len(result.distribution.worker_runs) == 2
    nobody = combine(config, None, [_worker(0, "error", 1.0, "killed by SIGKILL")])
    assert nobody.status == "error" and "SIGKILL" in (nobody.message or "")
    ok = chief.model_copy(update={"status": "ok", "message": None})
    late = combine(config, ok, [_worker(0, "ok", 5.0), _worker(1, "error", 6.0, "exit 1")])
    assert late.status == "ok"
    assert any("a worker failed after the run" in w for w in late.warnings)
