"""gpuscout's measurement against a plain, hand-written ``model.fit`` timing loop.

Prints figures, not pass/fail. For ``mlp`` and ``cnn-small`` on this machine's CPU, side by side
in one process with the same model code, data and settings:

1. a careful hand measurement: ``model.fit`` for a warm-up epoch, then ``model.fit`` for enough
   steps to last ~``PLAIN_SECONDS``, timed with ``perf_counter``: samples / elapsed;
2. ``gpuscout bench --loop fit`` (the same ``model.fit``, timed step by step by gpuscout);
3. ``gpuscout bench`` with its default custom ``tf.function`` step.

The ratio of (2) to (1) is the harness's overhead and agreement (target: within +-3%). Rounds
alternate (plain, gpuscout, plain, ...) so that drift of the machine hits both alike. Finally
it compares the time the adaptive protocol needed to reach +-2% with a fixed 10 + 100 steps.

Run: ``make bench-harness`` (or ``.venv/bin/python benchmarks/harness_vs_fit.py``).
"""

from __future__ import annotations

import os
import statistics
import time

from gpuscout.measure.tf_runtime import import_tensorflow

tf = import_tensorflow()  # first, so TensorFlow's start-up chatter is hidden

from gpuscout.measure import bench  # noqa: E402
from gpuscout.measure.tf_models import BUILDERS  # noqa: E402
from gpuscout.measure.workloads import WORKLOADS  # noqa: E402
from gpuscout.records import BenchConfig  # noqa: E402

WORKLOAD_BATCH = {"mlp": 256, "cnn-small": 64}
ROUNDS = 3
PLAIN_SECONDS = 8.0
BENCH_SECONDS = 12.0


def plain_fit(name: str, batch: int) -> float:
    """What a careful user writes: warm up, then time a long fit. Returns samples/s (mean)."""
    import numpy as np

    w = WORKLOADS[name]
    dims = w.resolve()
    built = BUILDERS[name](dims)
    rng = np.random.default_rng(0)
    x = rng.random((batch, *w.input_shape(dims)), dtype=np.float32)
    y = rng.integers(0, dims["classes"], size=(batch,)).astype("int32")
    ds = tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(tf.data.AUTOTUNE)
    built.model.compile(optimizer=built.optimizer, loss=built.loss, jit_compile=False)
    t0 = time.perf_counter()
    built.model.fit(ds, epochs=1, steps_per_epoch=30, shuffle=False, verbose=0)  # warm-up
    per_step = (time.perf_counter() - t0) / 30
    steps = max(100, int(PLAIN_SECONDS / per_step))
    t0 = time.perf_counter()
    built.model.fit(ds, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)
    return steps * batch / (time.perf_counter() - t0)


def gpuscout_run(name: str, batch: int, loop: str, **kw: object) -> dict[str, float]:
    cfg = BenchConfig.model_validate(
        {
            "workload": name,
            "batch_size": batch,
            "loop": loop,
            "device": "CPU:0",
            "seconds": BENCH_SECONDS,
            **kw,
        }
    )
    r = bench(cfg)
    assert r.status == "ok" and r.samples_per_second and r.warmup, r.message
    return {
        "median": r.samples_per_second.median,
        "mean": r.mean_samples_per_second or 0.0,
        "seconds": sum(r.step_times_s),
        "halfwidth": r.ci_rel_halfwidth or float("nan"),
        "cv": r.cv or 0.0,
        "stop": r.stop_reason or "",
    }


def main() -> None:
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPU cores; {ROUNDS} alternating rounds\n")
    print(
        f"{'workload':10} {'plain fit':>11} {'gs fit med':>11} {'gs fit mean':>11} "
        f"{'gs custom':>10} {'fit/plain':>10} {'mean/plain':>10} {'custom/plain':>12}"
    )
    for name, batch in WORKLOAD_BATCH.items():
        plain, fit_med, fit_mean, custom = [], [], [], []
        for _ in range(ROUNDS):
            plain.append(plain_fit(name, batch))
            g = gpuscout_run(name, batch, "fit")
            fit_med.append(g["median"])
            fit_mean.append(g["mean"])
            custom.append(gpuscout_run(name, batch, "custom")["median"])
        p, fm, fmean, c = (statistics.median(v) for v in (plain, fit_med, fit_mean, custom))
        print(
            f"{name:10} {p:11,.0f} {fm:11,.0f} {fmean:11,.0f} {c:10,.0f} "
            f"{fm / p:10.3f} {fmean / p:10.3f} {c / p:12.3f}"
        )

    print("\nseconds of training steps to a result: adaptive (stop at +-2%) vs fixed 10 + 100")
    print(
        f"{'workload':10} {'adaptive s':>10} {'CI +-':>7} {'stop':>10} {'fixed s':>8} {'CI +-':>7}"
    )
    for name, batch in WORKLOAD_BATCH.items():
        a = gpuscout_run(name, batch, "custom")
        f = gpuscout_run(name, batch, "custom", seconds=None, steps=100, warmup_steps=10)
        print(
            f"{name:10} {a['seconds']:10.2f} {a['halfwidth']:7.1%} {a['stop']:>10} "
            f"{f['seconds']:8.2f} {f['halfwidth']:7.1%}"
        )


if __name__ == "__main__":
    main()
