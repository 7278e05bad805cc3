"""Peak FLOP/s of the device, the denominator of MFU.

On a GPU the peak comes from its datasheet, through the sourced GPU catalog
(:mod:`gpuscout.catalog`). On a CPU no datasheet number is trustworthy (turbo, AVX frequency
offsets, SMT), so the peak is *measured* once per precision with a large matmul and cached on
disk. This module holds that cache and the matmul's size, so the size measured and the size the
run's ``peak_source`` names are one number.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import platformdirs


def cpu_matmul_size(precision: str) -> int:
    """The side of the square matmul that measures the CPU peak for ``precision``: smaller for
    the mixed precisions, because a CPU without native half-precision arithmetic emulates it and
    a 2048x2048 product would take seconds per try."""
    return 2048 if precision == "fp32" else 1024


def cpu_peak_source(precision: str) -> str:
    """Where a measured CPU peak comes from, naming the size actually multiplied."""
    n = cpu_matmul_size(precision)
    return f"measured: best {precision} {n}x{n} matmul on this CPU (cached)"


def _cache_file() -> Path:
    return Path(platformdirs.user_cache_dir("gpuscout")) / "cpu_peaks.json"


def cached_cpu_peak(key: str) -> float | None:
    """A measured CPU peak (FLOP/s) from the cache, or None."""
    try:
        value = json.loads(_cache_file().read_text()).get(key)
    except (OSError, ValueError):
        return None
    return float(value) if isinstance(value, int | float) else None


def store_cpu_peak(key: str, flops: float) -> None:
    """Remember a measured CPU peak; a cache that cannot be written is not an error."""
    path = _cache_file()
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
        data[key] = flops
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except (OSError, ValueError):
        pass


def gpu_peak(device_name: str, precision: str, tf32: bool) -> tuple[float | None, str]:
    """A GPU's datasheet peak for ``precision`` from the catalog, and its source; None with the
    reason when the catalog does not know the GPU (every backend asks this the same way)."""
    from gpuscout.catalog import load_catalog, peak_tflops

    gpu = load_catalog().find_device(device_name)
    if gpu is None:
        return None, (
            f"'{device_name}' is not in the GPU catalog, so no MFU "
            "(add it with GPUSCOUT_CATALOG=your_gpus.csv)"
        )
    tflops, rate = peak_tflops(gpu, precision, tf32)
    return tflops * 1e12, f"{gpu.name} {rate} ({gpu.source.split(';')[0]})"


def cpu_peak(framework: str, precision: str, measure: Callable[[], float]) -> tuple[float, str]:
    """This CPU's measured peak for ``precision`` under ``framework`` ("tf2.21.0", "jax0.10.2"),
    measured by ``measure`` the first time and cached, and its source."""
    from gpuscout.measure import environment

    key = f"{environment.cpu_model()}|{os.cpu_count()}|{framework}|{precision}"
    cached = cached_cpu_peak(key)
    if cached is None:
        cached = measure()
        store_cpu_peak(key, cached)
    return cached, cpu_peak_source(precision)


def matmul_flops(n: int, multiply: Callable[[], object], tries: int = 5) -> float:
    """FLOP/s of the best of ``tries`` square n x n matmuls, each ``multiply()`` returning only
    once its product is done (after one untimed call: tracing, compiling, warming up)."""
    import time

    multiply()
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        multiply()
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


def replicated(one: tuple[float | None, str], kind: str, replicas: int) -> tuple[float | None, str]:
    """Peak FLOP/s of ``replicas`` devices of ``kind`` together, for a data-parallel run's MFU,
    from one device's (peak, source). CPU replicas share one machine's cores: no peak adds up."""
    peak, source = one
    if replicas == 1:
        return peak, source
    if kind == "CPU":
        return None, (
            "none: the replicas share this machine's CPU cores, so there is no peak per "
            "replica to add up"
        )
    return (peak * replicas if peak else None), f"{replicas} x {source}"
