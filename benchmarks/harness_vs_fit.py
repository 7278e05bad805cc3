"""gpuscout's measurement against a plain, hand-written ``model.fit`` timing loop.

Prints figures, not pass/fail. For ``mlp`` and ``cnn-small`` on this machine's CPU, in one
process, with the same model code, data and settings, in ``PAIRS`` alternating pairs (so that
the machine's drift hits both alike), each pair running the same number of steps:

- plain: what a careful user writes: a warm-up ``fit``, then one timed ``fit`` of N steps,
  samples / elapsed (``perf_counter``);
- gpuscout ``--loop fit``: the same ``model.fit`` with N measured steps after detected warm-up,
  timed step by step by gpuscout; its median and its mean rate;
- gpuscout custom step (the default): a ``tf.function`` + ``GradientTape`` step.

TensorFlow runs with 1 intra-op and 1 inter-op thread here: on a 2-core machine the default
threading makes these small models bimodal (runs at ~100k or ~165k samples/s for ``mlp``, CV
over 20%), which drowns the comparison; with one thread each the spread is ~5%.

Then: the seconds of training steps the adaptive protocol needed to reach +-2%, against a fixed
10 warm-up + 100 steps, with the interval each achieved.

Run: ``make bench-harness`` (or ``.venv/bin/python benchmarks/harness_vs_fit.py``).
"""

from __future__ import annotations

import os
import statistics
import time

from gpuscout.measure.backends.tensorflow.runtime import import_tensorflow

tf = import_tensorflow()  # first, so TensorFlow's start-up chatter is hidden
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import numpy as np  # noqa: E402

from gpuscout.core.records import BenchConfig, RunResult  # noqa: E402
from gpuscout.measure import bench  # noqa: E402
from gpuscout.measure.backends.keras.models import BUILDERS  # noqa: E402
from gpuscout.workloads import WORKLOADS  # noqa: E402

WORKLOAD_BATCH = {"mlp": 256, "cnn-small": 64}
PAIRS = 10
PAIR_SECONDS = 3.0


class Plain:
    """A model compiled once and warmed up; each :meth:`time` is one hand timing of N steps."""

    def __init__(self, name: str, batch: int) -> None:
        w = WORKLOADS[name]
        dims = w.resolve()
        built = BUILDERS[name](dims)
        rng = np.random.default_rng(0)
        x = rng.random((batch, *w.input_shape(dims)), dtype=np.float32)
        y = rng.integers(0, dims["classes"], size=(batch,)).astype("int32")
        self.ds = tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(tf.data.AUTOTUNE)
        self.model = built.model
        self.model.compile(optimizer=built.optimizer, loss=built.loss, jit_compile=False)
        self.batch = batch
        self.fit(50)  # warm-up: tracing, first allocations
        t0 = time.perf_counter()
        self.fit(50)  # then a rate, to size the timed runs
        self.steps = max(100, int(PAIR_SECONDS / ((time.perf_counter() - t0) / 50)))

    def fit(self, steps: int) -> None:
        self.model.fit(self.ds, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)

    def time(self) -> float:
        t0 = time.perf_counter()
        self.fit(self.steps)
        return self.steps * self.batch / (time.perf_counter() - t0)


def gpuscout(name: str, batch: int, **kw: object) -> RunResult:
    cfg = BenchConfig.model_validate(
        {"workload": name, "batch_size": batch, "device": "CPU:0", "seed": 0, **kw}
    )
    result = bench(cfg)
    assert result.status == "ok", result.message
    return result


def _ratio_text(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main() -> None:
    print(
        f"TensorFlow {tf.__version__}, {os.cpu_count()} CPU cores, 1 intra-op + 1 inter-op "
        f"thread; {PAIRS} alternating pairs of equal step counts; median [min-max] of pairs\n"
    )
    header = (
        f"{'workload':10} {'steps':>6} {'plain fit':>10} {'gs fit med':>10} {'gs fit mean':>11}"
        f" {'gs custom':>10}  {'fit med/plain':>20}  {'fit mean/plain':>20}"
        f"  {'custom/plain':>20}"
    )
    print(header)
    for name, batch in WORKLOAD_BATCH.items():
        plain = Plain(name, batch)
        rows: dict[str, list[float]] = {k: [] for k in ("plain", "med", "mean", "custom")}
        for _ in range(PAIRS):
            rows["plain"].append(plain.time())
            fit = gpuscout(name, batch, loop="fit", steps=plain.steps, seconds=None)
            assert fit.samples_per_second and fit.mean_samples_per_second
            rows["med"].append(fit.samples_per_second.median)
            rows["mean"].append(fit.mean_samples_per_second)
            custom = gpuscout(name, batch, steps=plain.steps, seconds=None)
            assert custom.samples_per_second
            rows["custom"].append(custom.samples_per_second.median)
        med = {k: statistics.median(v) for k, v in rows.items()}

        def ratios(key: str, rows: dict[str, list[float]] = rows) -> list[float]:
            return [a / b for a, b in zip(rows[key], rows["plain"], strict=True)]

        print(
            f"{name:10} {plain.steps:6d} {med['plain']:10,.0f} {med['med']:10,.0f} "
            f"{med['mean']:11,.0f} {med['custom']:10,.0f}  {_ratio_text(ratios('med')):>20}"
            f"  {_ratio_text(ratios('mean')):>20}  {_ratio_text(ratios('custom')):>20}"
        )

    print("\nseconds of training steps to a result: adaptive (stop at +-2%) vs fixed 10 + 100")
    print(
        f"{'workload':10} {'adaptive s':>10} {'its CI':>7} {'stop':>10}"
        f" {'fixed s':>8} {'its CI':>7}"
    )
    for name, batch in WORKLOAD_BATCH.items():
        a = gpuscout(name, batch, seconds=30.0)
        f = gpuscout(name, batch, seconds=None, steps=100, warmup_steps=10)
        print(
            f"{name:10} {sum(a.step_times_s):10.2f} {_pm(a):>7} {a.stop_reason:>10} "
            f"{sum(f.step_times_s):8.2f} {_pm(f):>7}"
        )


def _pm(r: RunResult) -> str:
    return f"+-{r.ci_rel_halfwidth:.1%}" if r.ci_rel_halfwidth is not None else "n/a"


if __name__ == "__main__":
    main()
