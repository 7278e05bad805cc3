"""TensorFlow's default threading against one intra-op + one inter-op thread, on `mlp`.

Prints figures, not pass/fail. Each setting runs in its own interpreter (threading can only be
set before TensorFlow starts): a warm-up `fit`, then `ROUNDS` timed `fit`s of `STEPS` steps,
samples / elapsed each. On a small machine the default threading can make small models slower
and bimodal; this shows whether it does here.

Run: ``.venv/bin/python benchmarks/threads_small_models.py``.
"""

from __future__ import annotations

import subprocess
import sys

ROUNDS = 8
STEPS = 1000

CHILD = """
import sys, time
import numpy as np
from gpuscout.measure.backends.tensorflow.runtime import import_tensorflow
tf = import_tensorflow()
if sys.argv[1] != "default":
    intra, inter = map(int, sys.argv[1].split(","))
    tf.config.threading.set_intra_op_parallelism_threads(intra)
    tf.config.threading.set_inter_op_parallelism_threads(inter)
from gpuscout.measure.backends.keras.models import BUILDERS
from gpuscout.workloads import WORKLOADS
dims = WORKLOADS["mlp"].resolve()
built = BUILDERS["mlp"](dims)
rng = np.random.default_rng(0)
x = rng.random((256, 780), dtype=np.float32)
y = rng.integers(0, 10, size=(256,)).astype("int32")
ds = tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(tf.data.AUTOTUNE)
built.model.compile(optimizer=built.optimizer, loss=built.loss, jit_compile=False)
fit = lambda n: built.model.fit(ds, epochs=1, steps_per_epoch=n, shuffle=False, verbose=0)
fit(50)
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter(); fit(int(sys.argv[3]))
    print(int(sys.argv[3]) * 256 / (time.perf_counter() - t0))
"""


def main() -> None:
    print(f"mlp, batch 256: {ROUNDS} timed fits of {STEPS} steps per setting (samples/s)")
    for setting in ("default", "1,1"):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, setting, str(ROUNDS), str(STEPS)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rates = [float(v) for v in out.split()]
        mean = sum(rates) / len(rates)
        cv = (sum((r - mean) ** 2 for r in rates) / (len(rates) - 1)) ** 0.5 / mean
        label = "TensorFlow default" if setting == "default" else "1 intra + 1 inter"
        each = " ".join(f"{r / 1e3:.0f}k" for r in rates)
        print(f"{label:19} mean {mean / 1e3:5.0f}k  CV {cv:5.1%}  [{each}]")


if __name__ == "__main__":
    main()
