"""How the results store scales: ``runs import`` and ``runs list`` over a team-sized store.

Generates N realistic runs (default 10,000: mixed workloads, devices and precisions, some
OOM and error runs, each with its step times, monitor summary and timeline) as one import
file, then times, as a user runs them, each command in a fresh process: wall time and peak
resident memory (``ru_maxrss`` of that process alone, through a small wrapper process, so one
command's peak does not hide the next one's).

    python benchmarks/store_scale.py [N] [--keep DIR]

``make_runs(n, seed)`` is the generator, for other benchmarks (the report over a big store).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gpuscout.core.records import SCHEMA_VERSION

WORKLOADS = ("mlp", "cnn-small", "resnet50", "bert-base", "gpt2-small")
DEVICES = ("GPU:0", "GPU:1", "CPU:0")
PRECISIONS = ("fp32", "mixed_float16", "mixed_bfloat16")
DEVICE_NAMES = ("NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")
STEPS = 200  # step times per run: a few seconds of a small model's measurement
TIMELINE = 60  # monitor samples per run (6 s at 10 Hz)

# A wrapper that runs one command and prints its peak RSS (KiB on Linux) as the last line.
_WRAP = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(code, u.ru_maxrss, u.ru_utime + u.ru_stime)\n"
)


def make_runs(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N runs as ``gpuscout runs export`` writes them (the envelope's ``runs``), oldest first.

    Deterministic for a seed. Every run passes the import's validation: ordered intervals,
    positive rates and times, ISO 8601 dates; about 3 % are OOM and 2 % error runs."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    runs = []
    for i in range(n):
        workload = rng.choice(WORKLOADS)
        device = rng.choice(DEVICES)
        precision = rng.choice(PRECISIONS)
        batch = rng.choice((32, 64, 128, 256))
        created = (start + timedelta(minutes=7 * i)).isoformat(timespec="seconds")
        roll = rng.random()
        status = "oom" if roll < 0.03 else "error" if roll < 0.05 else "ok"
        config = {"workload": workload, "precision": precision, "batch_size": batch}
        run: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "id": i + 1,
            "created_at": created,
            "status": status,
            "workload": workload,
            "device": device,
            "precision": precision,
            "xla": rng.random() < 0.2,
            "loop": rng.choice(("custom", "fit")),
            "batch_size": batch,
            "config": config,
            "env": {
                "tensorflow": "2.21.0",
                "keras": "3.12.0",
                "device_name": rng.choice(DEVICE_NAMES) if device != "CPU:0" else "CPU",
                "hostname": f"node{rng.randrange(40):02d}",
            },
            "note": f"sweep {i // 100}" if rng.random() < 0.3 else None,
        }
        if status != "ok":
            run["message"] = (
                f"out of memory at batch {batch}. Try --batch-size {batch // 2}"
                if status == "oom"
                else "the step raised InvalidArgumentError"
            )
            runs.append(run)
            continue
        step = rng.uniform(0.004, 0.2)
        times = [step * rng.lognormvariate(0, 0.05) for _ in range(STEPS)]
        times[:5] = [t * 10 for t in times[:5]]  # warm-up
        steady = sorted(times[5:])
        median = steady[len(steady) // 2]
        low, high = median * (1 - rng.uniform(0.002, 0.02)), median * (1 + rng.uniform(0.002, 0.02))
        sps = batch / median
        # FLOPs a step, at most 80 % of the device's peak over the step (the store refuses a
        # run whose MFU contradicts its TFLOP/s)
        flops = min(3e9 * batch, 0.8 * 82.6e12 * median)
        run.update(
            {
                "samples_per_second": {
                    "median": sps,
                    "ci_low": batch / high,
                    "ci_high": batch / low,
                },
                "mean_samples_per_second": batch * len(steady) / sum(steady),
                "step_time_s": {
                    "median": median,
                    "p5": steady[len(steady) // 20],
                    "p95": steady[len(steady) * 19 // 20],
                    "mean": sum(steady) / len(steady),
                },
                "ci_rel_halfwidth": (high - low) / 2 / median,
                "cv": 0.05,
                "outliers": rng.randrange(4),
                "warmup": {"steps": 5, "seconds": sum(times[:5]), "method": "steady-state"},
                "measured_steps": len(steady),
                "stop_reason": "ci_target",
                "flops_per_step": flops,
                "flops_method": "xla_cost_analysis",
                "tflops": flops / median / 1e12,
                "peak_tflops": 82.6,
                "peak_source": "catalog",
                "mfu": flops / median / 82.6e12,
                "peak_memory_bytes": rng.randrange(1, 20) * 2**30,
                "memory_method": "tf.config.experimental.get_memory_info",
                "warnings": ["the CPU was busy"] if rng.random() < 0.1 else [],
                "monitor": {
                    "window": "measured",
                    "interval_s": 0.1,
                    "samples": TIMELINE,
                    "seconds": TIMELINE / 10,
                    "cpu_utilization_mean": rng.random(),
                    "cpu_cores": 16,
                },
                "step_times_s": times,
                "monitor_timeline": {
                    "t": [k / 10 for k in range(TIMELINE)],
                    "cpu": [round(rng.random(), 3) for _ in range(TIMELINE)],
                    "gpu0_util": [round(rng.random(), 3) for _ in range(TIMELINE)],
                    "rss": [float(rng.randrange(10**9, 4 * 10**9)) for _ in range(TIMELINE)],
                },
            }
        )
        runs.append(run)
    return runs


def write_import_file(path: Path, n: int, seed: int = 0) -> None:
    """The runs of :func:`make_runs` in the export envelope, as ``runs import`` reads it."""
    body = {
        "format": "gpuscout-runs",
        "schema_version": SCHEMA_VERSION,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": make_runs(n, seed),
    }
    path.write_text(json.dumps(body, allow_nan=False))


def timed(args: list[str], env: dict[str, str]) -> tuple[int, float, float]:
    """(exit code, wall seconds, peak RSS in MB) of ``gpuscout ARGS`` in a fresh process."""
    code, wall, mb, _ = timed_cpu(args, env)
    return code, wall, mb


def timed_cpu(args: list[str], env: dict[str, str]) -> tuple[int, float, float, float]:
    """(exit code, wall s, peak RSS MB, CPU s) of ``gpuscout ARGS`` in a fresh process: the
    CPU time is what a busy machine does not inflate, unlike the wall time."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _WRAP, sys.executable, "-m", "gpuscout", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    code, kib, cpu = done.stdout.split()[-3:]
    return int(code), wall, int(kib) / 1024, float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=10_000, help="runs (default 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="leave the import file and database here")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="gpuscout-store-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    data, db = folder / "runs.json", folder / "runs.sqlite"
    db.unlink(missing_ok=True)
    started = time.perf_counter()
    write_import_file(data, args.n, args.seed)
    print(
        f"{args.n:,} runs generated in {time.perf_counter() - started:.1f} s: "
        f"{data.stat().st_size / 1e6:,.1f} MB import file"
    )
    env = {**os.environ, "GPUSCOUT_DB": str(db)}
    commands = {
        "runs import": ["runs", "import", str(data)],
        "runs list (default: newest 50)": ["runs", "list"],
        "runs list --limit 0 (all)": ["runs", "list", "--limit", "0"],
        "runs list --json (all)": ["runs", "list", "--json"],
        "runs show (one run)": ["runs", "show", str(args.n // 2)],
    }
    print(f"{'command':<34} {'exit':>4} {'wall s':>8} {'peak RSS MB':>12}")
    for name, cmd in commands.items():
        code, wall, rss = timed(cmd, env)
        print(f"{name:<34} {code:>4} {wall:>8.2f} {rss:>12.0f}")
    print(f"database: {db.stat().st_size / 1e6:,.1f} MB")
    if not args.keep:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
