"""The same Keras workloads on TensorFlow and on JAX, on this machine: figures and ratios.

Prints figures, not pass/fail. For each workload, ``gpuscout bench`` runs it through each
backend in turn, ``ROUNDS`` alternating rounds (so the machine's drift hits both alike), with
the same workload, precision and batch (each backend's default XLA setting: TensorFlow's custom
step without XLA, as users run it, and JAX, which always compiles with XLA). Each run is a real
``gpuscout bench --backend B --json`` process; the table shows each backend's median samples/s
with its 95% interval, and JAX over TensorFlow with the interval ``runs compare`` gives.

    make bench-backends        # or .venv/bin/python benchmarks/backends.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuscout.core.comparison import compare
from gpuscout.core.records import RunResult

WORKLOADS = {  # workload: extra bench arguments (batch sizes for a 2-core CPU)
    "mlp": ["--batch-size", "256"],
    "cnn-small": ["--batch-size", "64"],
    "resnet50": ["--batch-size", "8", "--precision", "fp32"],
    "bert-base": ["--batch-size", "8", "--seq-len", "128"],
}
ROUNDS = 2


def _bench(backend: str, workload: str, extra: list[str], seconds: float, db: Path) -> RunResult:
    args = ["bench", "--backend", backend, "--workload", workload, "--seconds", str(seconds),
            "--db", str(db), "--json", *extra]  # fmt: skip
    code = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return RunResult.model_validate(json.loads(proc.stdout))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="budget per run")
    parser.add_argument("--only", help="comma-separated workloads")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="alternating rounds")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    start = time.perf_counter()
    db = Path(tempfile.mkdtemp(prefix="gpuscout-backends-")) / "runs.sqlite"
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"{args.seconds:g} s per run, {args.rounds} alternating rounds")  # fmt: skip
    print(f"{'workload':10s} {'batch':>5s} {'TensorFlow samples/s':>28s} "
          f"{'JAX samples/s':>28s} {'JAX / TF [95% CI]':>24s}")  # fmt: skip
    for name in names:
        runs: dict[str, list[RunResult]] = {"tensorflow": [], "jax": []}
        for _ in range(args.rounds):
            for backend in runs:
                runs[backend].append(_bench(backend, name, WORKLOADS[name], args.seconds, db))
        # each backend's best-converged round (narrowest interval) stands for it
        best = {b: min(rs, key=lambda r: r.ci_rel_halfwidth or 1.0) for b, rs in runs.items()}
        tf_run, jax_run = best["tensorflow"], best["jax"]
        c = compare(tf_run, jax_run)
        cell = {b: _rate(r) for b, r in best.items()}
        s = c.speedup
        if not c.comparable:
            ratio = "not comparable"
        elif s is None or s.ci_low is None or s.ci_high is None:
            ratio = f"{s.median:.2f}x (no interval)" if s else "-"
        else:
            ratio = f"{s.median:.2f}x [{s.ci_low:.2f}-{s.ci_high:.2f}]"
        print(f"{name:10s} {tf_run.batch_size:5d} {cell['tensorflow']:>28s} {cell['jax']:>28s} "
              f"{ratio:>24s}")  # fmt: skip
        versions = (f"TensorFlow {tf_run.env.get('tensorflow')}, JAX {jax_run.env.get('jax')}, "
                    f"Keras {jax_run.env.get('keras')}")  # fmt: skip
    print(f"# {versions}; ({time.perf_counter() - start:.0f} s)")


def _rate(run: RunResult) -> str:
    sps = run.samples_per_second
    if sps is None:
        return run.status
    digits = 0 if sps.median >= 100 else 2
    if sps.ci_low is None or sps.ci_high is None:
        return f"{sps.median:,.{digits}f} (too few steps)"
    return f"{sps.median:,.{digits}f} [{sps.ci_low:,.{digits}f}-{sps.ci_high:,.{digits}f}]"


if __name__ == "__main__":
    main()
