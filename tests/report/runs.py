"""Fixed runs for report tests: what bench, a scaling sweep and a GPU machine would store,
written by hand so the report's figures (and the golden files) never change."""

from __future__ import annotations

from gpuscout.core.records import BenchConfig, Distribution, Interval, RunResult, Scaling
from tests.store.test_store import _result

HOSTILE = "<script>alert(1)</script>"


def _run(**update: object) -> RunResult:
    """The store tests' run, as a 256-sample mlp step at 50,000 samples/s on a host 'box'."""
    base = _result().model_copy(
        update={
            "batch_size": 256,
            "samples_per_second": Interval(median=50_000.0, ci_low=48_000.0, ci_high=52_000.0),
            "epoch_samples": 60_000,
            "epoch_seconds": 1.2,
            "env": {"tensorflow": "2.21.0", "device_name": "CPU", "hostname": "box"},
        }
    )
    return base.model_copy(update=update)


def report_runs() -> list[RunResult]:
    """A CPU run with its monitor timeline and a hostile note; a two-point logical-device sweep;
    a ResNet-50 run on an A100 with GPU monitor columns; a user model with a hostile name."""
    cpu_timeline = {
        "t": [0.0, 0.5, 1.0, 1.5],
        "cpu": [0.2, 0.9, 0.95, 0.9],
        "cpu_busiest": [0.4, 1.0, 1.0, 1.0],
        "rss": [1e9, 1.2e9, 1.2e9, 1.2e9],
    }
    gpu_timeline = {
        "t": [0.0, 1.0, 2.0],
        "cpu": [0.1, 0.3, 0.3],
        "rss": [2e9, 2e9, 2e9],
        "gpu0.utilization": [0.1, 0.97, 0.98],
        "gpu0.sm_clock_mhz": [1410.0, 1410.0, 1395.0],
        "gpu0.memory_used_bytes": [1e9, 30e9, 30e9],
    }

    def sweep(replicas: int, sps: float, eff: Interval | None) -> RunResult:
        return _run(
            samples_per_second=Interval(median=sps, ci_low=sps * 0.97, ci_high=sps * 1.03),
            batch_size=256 * replicas,
            distribution=Distribution(
                strategy="MirroredStrategy",
                replicas=replicas,
                devices=[f"CPU:{i}" for i in range(replicas)],
                logical_devices=True,
                per_replica_batch=256,
                global_batch=256 * replicas,
                scaling=Scaling(sweep="s1", base_replicas=1, base_run_id=2, efficiency=eff),
            ),
            device=",".join(f"CPU:{i}" for i in range(replicas)),
        )

    return [
        _run(note=f"{HOSTILE} | **bold** [link](http://x)", monitor_timeline=cpu_timeline),
        sweep(1, 40_000.0, Interval(median=1.0, ci_low=1.0, ci_high=1.0)),
        sweep(2, 46_000.0, Interval(median=0.575, ci_low=0.55, ci_high=0.6)),
        _run(
            workload="resnet50",
            device="GPU:0",
            precision="mixed_float16",
            samples_per_second=Interval(median=2_400.0, ci_low=2_380.0, ci_high=2_420.0),
            epoch_samples=1_281_167,
            epoch_seconds=533.8,
            epoch_unit="images",
            env={
                "tensorflow": "2.21.0",
                "device_name": "NVIDIA A100-SXM4-80GB",
                "hostname": "gpu1",
            },
            monitor_timeline=gpu_timeline,
        ),
        _run(workload=HOSTILE, device="CPU:0", note=None, message=None),
        _inference(),
    ]


def _inference() -> RunResult:
    """A ``bench --mode inference`` run: two batch sizes under a 5 ms p99 target."""
    from gpuscout.measure.latency import inference_result

    config = BenchConfig(mode="inference", batch_sizes=[1, 8], slo_ms=5.0, rate=20_000.0)
    fast = [0.001 + 0.000001 * i for i in range(1000)]  # 1-2 ms
    slow = [0.004 + 0.000002 * i for i in range(1000)]  # 4-6 ms
    served = [("tf.function", 1, 1, fast, 1.5), ("tf.function", 8, 1, slow, 5.0)]
    run = inference_result(config, "CPU:0", "mlp", served, ["inputs: random"], {"hostname": "box"})
    return run.model_copy(update={"created_at": "2026-12-02T12:00:00+00:00"})
