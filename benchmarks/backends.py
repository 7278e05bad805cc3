"""The same Keras workloads on TensorFlow, JAX and PyTorch, on this machine: figures, ratios.

Prints figures, not pass/fail. For each workload, ``gpuscout bench`` runs it through each
backend in turn, ``ROUNDS`` alternating rounds (so the machine's drift hits both alike), with
the same workload, precision and batch (each backend's default XLA setting: TensorFlow's custom
step without XLA, as users run it, and JAX, which always compiles with XLA). Each run is a real
``gpuscout bench --backend B --json`` process; the table shows each backend's median samples/s
with its 95% interval, and JAX and PyTorch over TensorFlow with the interval ``runs compare``
gives (PyTorch where torch is installed: Keras' eager torch step).

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
    import importlib.util

    backends = ["tensorflow", "jax"] + (["torch"] if importlib.util.find_spec("torch") else [])
    names_shown = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}
    print(
        f"{'workload':10s} {'batch':>5s} "
        + " ".join(f"{names_shown[b] + ' samples/s':>28s}" for b in backends)
        + " ".join(f"{names_shown[b] + ' / TF [95% CI]':>28s}" for b in backends[1:])
    )
    versions = ""
    for name in names:
        runs: dict[str, list[RunResult]] = {b: [] for b in backends}
        for _ in range(args.rounds):
            for backend in runs:
                runs[backend].append(_bench(backend, name, WORKLOADS[name], args.seconds, db))
        # each backend's best-converged round (narrowest interval) stands for it
        best = {b: min(rs, key=lambda r: r.ci_rel_halfwidth or 1.0) for b, rs in runs.items()}
        tf_run = best["tensorflow"]
        ratios = [_ratio(tf_run, best[b]) for b in backends[1:]]
        cells = " ".join(f"{_rate(best[b]):>28s}" for b in backends)
        print(f"{name:10s} {tf_run.batch_size:5d} {cells} " + " ".join(f"{r:>28s}" for r in ratios))
        versions = (
            ", ".join(f"{names_shown[b]} {best[b].env.get(b)}" for b in backends)
            + f", Keras {tf_run.env.get('keras')}"
        )
    print(f"# {versions}; ({time.perf_counter() - start:.0f} s)")


def _ratio(base: RunResult, other: RunResult) -> str:
    """``other`` over ``base`` with the interval ``runs compare`` gives."""
    c = compare(base, other)
    s = c.speedup
    if not c.comparable:
        return "not comparable"
    if s is None or s.ci_low is None or s.ci_high is None:
        return f"{s.median:.2f}x (no interval)" if s else "-"
    return f"{s.median:.2f}x [{s.ci_low:.2f}-{s.ci_high:.2f}]"


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
