"""Checks and the one-page summary of ``scripts/gpu_acceptance.sh`` (see its header).

    python scripts/gpu_acceptance_check.py --out DIR [--cpu] WORKLOAD ...

Reads DIR/WORKLOAD.json (``gpuscout bench --json``), asks ``gpuscout predict`` for the range
of the same workload, precision and batch on the GPU the run found, writes DIR/summary.md and
DIR/checks.json, and exits 1 if a check failed (2 if a run is missing). ``--cpu``: the GPU
checks (catalog GPU, NVML monitor, allocator memory, prediction) are skipped and said so.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Check = tuple[str, bool | None, str]  # name, passed (None: skipped), detail


def _gpuscout(*args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "gpuscout", *args, "--json"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    return json.loads(proc.stdout)


def _catalog_id(run: dict[str, Any]) -> str | None:
    """The catalog GPU the run's device is (the name the driver reports, as bench records it)."""
    from gpuscout.catalog import load_catalog

    gpu = load_catalog().find_device(str(run["env"].get("device_name") or ""))
    return gpu.id if gpu else None


def _points(run: dict[str, Any]) -> list[dict[str, Any]]:
    return list(((run.get("inference") or {}).get("points")) or [])


def check_run(run: dict[str, Any], cpu: bool) -> list[Check]:
    """Every check of one run (a bench --json result: training, or an inference sweep)."""
    ok = run.get("status") == "ok"
    checks: list[Check] = [("measured", ok, run.get("message") or run.get("status", "?"))]
    if not ok:
        return checks
    if run.get("mode") == "inference":
        return checks + _check_sweep(run, cpu)
    checks.append(_check_mfu(run, cpu))
    # the script measures the workloads on JAX and a plain PyTorch --model on PyTorch
    expected = "torch" if (run.get("config") or {}).get("model") else "jax"
    checks.append((f"backend {expected}", run.get("backend") == expected,
                   str(run.get("backend"))))  # fmt: skip
    memory = run.get("peak_memory_bytes")
    if cpu and expected == "torch":  # PyTorch reports no allocator peak on a CPU (said)
        checks.append(("peak memory", None, str(run.get("memory_method"))))
    else:
        checks.append(("peak memory", bool(memory), f"{(memory or 0) / 1e9:.2f} GB, "
                       f"{run.get('memory_method')}"))  # fmt: skip
    if cpu:
        checks.append(("GPU checks", None, "skipped: --cpu"))
        return checks
    gpus = ((run.get("monitor") or {}).get("gpus")) or []
    gpu_id = None
    try:
        gpu_id = _catalog_id(run)
    except (RuntimeError, ValueError, IndexError, KeyError) as exc:
        checks.append(("GPU in the catalog", False, str(exc)))
    else:
        checks.append(("GPU in the catalog", gpu_id is not None,
                       f"{run['env'].get('device_name')} -> {gpu_id}"))  # fmt: skip
    checks.append(("allocator memory", "allocator" in str(run.get("memory_method")),
                   str(run.get("memory_method"))))  # fmt: skip
    first = gpus[0] if gpus else {}
    for key, name in (("utilization_mean", "utilisation"), ("sm_clock_mean_mhz", "SM clock"),
                      ("power_mean_w", "power")):  # fmt: skip
        value = first.get(key)
        checks.append((f"monitor {name}", value is not None, str(value)))
    if gpu_id:
        checks.append(_against_prediction(run, gpu_id))
    return checks


def _check_mfu(run: dict[str, Any], cpu: bool) -> Check:
    """MFU in (0, 1): a missing synchronisation shows as an impossible MFU. On a CPU the peak is
    an estimate (a measured matmul, raised when a run exceeds it) and MFU is stored at most 1.0;
    the run's own FLOP/s against that peak must still be below twice it, as an unsynchronised
    step is many times faster than any matmul."""
    mfu = run.get("mfu")
    if mfu is None:
        return ("MFU in (0, 1)", False, "no MFU")
    if not cpu:
        return ("MFU in (0, 1)", 0 < mfu < 1, f"{mfu:.1%}")
    ratio = (run.get("tflops") or 0) / (run.get("peak_tflops") or float("inf"))
    said = "≥ 100 % of the measured peak: the peak was measured low" if mfu >= 1 else f"{mfu:.1%}"
    detail = f"{said} ({run.get('peak_source')})"
    return ("MFU in (0, 1]", 0 < mfu <= 1 and ratio < 2, detail)


def _check_sweep(run: dict[str, Any], cpu: bool) -> list[Check]:
    """An inference sweep: every point served requests with a p99 and its interval; on a GPU
    the monitor saw it and the largest batch is compared with ``predict --mode inference``."""
    points = _points(run)
    checks: list[Check] = [
        ("backend jax", run.get("backend") == "jax", str(run.get("backend"))),
        ("points served", bool(points) and all(p["requests"] > 0 for p in points),
         ", ".join(f"b{p['batch_size']}: {p['requests']:,}" for p in points)),
        ("p99 with interval", all(p["p99_s"].get("ci_high") is not None for p in points),
         ", ".join(f"b{p['batch_size']}: {p['p99_s']['median'] * 1e3:.3g} ms" for p in points)),
    ]  # fmt: skip
    if cpu:
        return [*checks, ("GPU checks", None, "skipped: --cpu")]
    first = (((run.get("monitor") or {}).get("gpus")) or [{}])[0]
    checks.append(("monitor utilisation", first.get("utilization_mean") is not None,
                   str(first.get("utilization_mean"))))  # fmt: skip
    gpu_id = _catalog_id(run)
    if gpu_id and points:
        top = max(points, key=lambda p: p["batch_size"])
        try:
            row = _gpuscout("predict", "--mode", "inference", "--workload", run["workload"],
                            "--precision", run["precision"], "--gpus", gpu_id,
                            "--batch-size", str(top["batch_size"]))[0]  # fmt: skip
            detail = (
                f"batch {top['batch_size']}: measured {top['samples_per_second']:,.0f}/s, "
                f"predicted {row['samples_per_second']:,.0f}/s (forward pass only)"
            )
        except (RuntimeError, ValueError, IndexError) as exc:
            detail = f"no prediction: {exc}"
        checks.append(("against predict", None, detail))
    return checks


def _against_prediction(run: dict[str, Any], gpu_id: str) -> Check:
    model = (run.get("config") or {}).get("model")  # a user's (PyTorch) model: its own step
    what = ["--model", model] if model else ["--workload", run["workload"]]
    args = ["predict", *what, "--precision", run["precision"],
            "--gpus", gpu_id, "--batch-size", str(run["batch_size"])]  # fmt: skip
    try:
        row = _gpuscout(*args)[0]
    except (RuntimeError, ValueError, IndexError) as exc:
        return ("against predict", False, f"no prediction: {exc}")
    measured = run["samples_per_second"]["median"]
    low, mid, high = row["low"], row["samples_per_second"], row["high"]
    where = "inside" if low <= measured <= high else f"x{measured / mid:.2f} of the prediction"
    # a comparison, not a pass/fail: predictions are for TensorFlow and PyTorch stacks
    return ("against predict", None, f"measured {measured:,.0f}/s, predicted {mid:,.0f}/s "
            f"[{low:,.0f}-{high:,.0f}]: {where}")  # fmt: skip


def summary(runs: dict[str, dict[str, Any]], checks: dict[str, list[Check]], cpu: bool) -> str:
    first = next(iter(runs.values()), {})
    env = first.get("env", {})
    torch = {
        f", PyTorch {r['env']['torch']}" for r in runs.values() if r.get("env", {}).get("torch")
    }
    lines = [
        f"# gpuscout GPU acceptance{' (--cpu)' if cpu else ''}",
        "",
        f"{datetime.now(UTC).isoformat(timespec='seconds')} · {env.get('device_name')} · "
        f"JAX {env.get('jax')}, Keras {env.get('keras')}, gpuscout {env.get('gpuscout')}, "
        f"Python {platform.python_version()}{''.join(sorted(torch))}",
        "",
        "| workload | samples/s [95% CI] | MFU | peak memory | check | result | detail |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for name, run in runs.items():
        sps = run.get("samples_per_second") or {}
        rate = f"{sps['median']:,.0f}" if sps else "-"
        if _points(run):
            rate = f"{max(p['samples_per_second'] for p in _points(run)):,.0f} (best point)"
        if sps and sps.get("ci_low") is not None and sps.get("ci_high") is not None:
            rate += f" [{sps['ci_low']:,.0f}-{sps['ci_high']:,.0f}]"
        mfu = f"{run['mfu']:.1%}" if run.get("mfu") is not None else "-"
        mfu = "≥ 100 % (peak measured low)" if cpu and (run.get("mfu") or 0) >= 1 else mfu
        memory = f"{(run.get('peak_memory_bytes') or 0) / 1e9:.2f} GB"
        for i, (check, passed, detail) in enumerate(checks[name]):
            mark = {True: "pass", False: "FAIL", None: "-"}[passed]
            head = (name, rate, mfu, memory) if i == 0 else ("", "", "", "")
            lines.append(f"| {' | '.join(head)} | {check} | {mark} | {detail} |")
    failed = sum(1 for cs in checks.values() for _, p, _ in cs if p is False)
    lines += ["", f"{failed} check{'s' * (failed != 1)} failed." if failed else "All checks "
              "passed."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("workloads", nargs="+")
    args = parser.parse_args(argv)
    runs: dict[str, dict[str, Any]] = {}
    for name in args.workloads:
        path = args.out / f"{name}.json"
        try:
            runs[name] = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(f"gpu_acceptance: no result for {name} ({path}: {exc})", file=sys.stderr)
            return 2
    checks = {name: check_run(run, args.cpu) for name, run in runs.items()}
    (args.out / "summary.md").write_text(summary(runs, checks, args.cpu))
    (args.out / "checks.json").write_text(json.dumps(checks, indent=1))
    print((args.out / "summary.md").read_text())
    return 1 if any(p is False for cs in checks.values() for _, p, _ in cs) else 0


if __name__ == "__main__":
    sys.exit(main())
