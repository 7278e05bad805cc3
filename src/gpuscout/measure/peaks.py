"""Peak FLOP/s of the device, the denominator of MFU.

On a GPU the peak comes from its datasheet, through the sourced GPU catalog
(:mod:`gpuscout.catalog`). On a CPU no datasheet number is trustworthy (turbo, AVX frequency
offsets, SMT), so the peak is *measured* with a large matmul and cached on disk, and MFU on a
CPU is an estimate. Load only ever slows a matmul down, so the peak is kept as an upper bound:
the best of several rounds, and the cache only ever rises — a run that goes faster than the
cached peak (which was measured while the machine was busy) has it measured again at once and
raised (:func:`upper_bound`). This module holds that cache and the matmul's size, so the size
measured and the size the run's ``peak_source`` names are one number.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import platformdirs


def cpu_matmul_size(precision: str) -> int:
    """The side of the square matmul that measures the CPU peak for ``precision``: smaller for
    the mixed precisions, because a CPU without native half-precision arithmetic emulates it and
    a 2048x2048 product would take seconds per try."""
    return 2048 if precision == "fp32" else 1024


CPU_PEAK_ROUNDS = 3
"""Rounds of best-of-5 matmuls in a CPU peak: a busy neighbour that stalls one round rarely
stalls all three, and the fastest round is the nearest to what the CPU can do."""

ESTIMATE = "estimate: measured matmul peak"
"""How every CPU peak's source starts: MFU on a CPU is against a measured matmul, not a
datasheet, so the output says it is an estimate."""

PEAK_MEASURED_LOW = "≥ 100 % of the measured peak: the peak was measured low"
"""What a CPU run's MFU is said to be when it exceeds even a re-measured peak (it is stored as
1.0: an MFU above 100 % is a wrong peak, not a fast run)."""

# The measurers of the CPU peaks this process has handed out, by source: a run that exceeds
# one measures it again (one measurement runs per child process, so one entry in practice).
_MEASURERS: dict[str, tuple[str, Callable[[], float]]] = {}


def cpu_peak_source(precision: str) -> str:
    """Where a measured CPU peak comes from, naming the size actually multiplied."""
    n = cpu_matmul_size(precision)
    return (
        f"{ESTIMATE}: best {precision} {n}x{n} matmul on this CPU "
        "(cached; raised when a run exceeds it)"
    )


def best_of(measure: Callable[[], float], rounds: int = CPU_PEAK_ROUNDS) -> float:
    """The highest of ``rounds`` measurements: load only slows a matmul, never speeds it up."""
    return max(measure() for _ in range(rounds))


def _cache_file() -> Path:
    return Path(platformdirs.user_cache_dir("gpuscout")) / "cpu_peaks.json"


def cached_cpu_peak(key: str) -> float | None:
    """A measured CPU peak (FLOP/s) from the cache, or None."""
    try:
        value = json.loads(_cache_file().read_text()).get(key)
    except (OSError, ValueError):
        return None
    return float(value) if isinstance(value, int | float) else None


def store_cpu_peak(key: str, flops: float) -> float:
    """Remember a measured CPU peak, never lowering one already cached (a peak is an upper
    bound: a lower figure was measured under load); returns the peak now in force. A cache
    that cannot be written is not an error."""
    path = _cache_file()
    before = cached_cpu_peak(key)
    flops = max(flops, before) if before is not None else flops
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
        if not isinstance(data, dict):
            data = {}
        data[key] = flops
        path.parent.mkdir(parents=True, exist_ok=True)
        # a temp file of its own: two processes storing at once each replace the cache whole
        # (one's key may be lost, to be measured again; the file is never half written)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name, suffix=".tmp",
                                         delete=False) as tmp:  # fmt: skip
            tmp.write(json.dumps(data, indent=1, sort_keys=True))
        Path(tmp.name).replace(path)
    except (OSError, ValueError):
        pass
    return flops


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
    the best of :data:`CPU_PEAK_ROUNDS` runs of ``measure`` the first time, then cached, and its
    source. ``measure`` is kept so that :func:`upper_bound` can measure again."""
    from gpuscout.measure import environment

    key = f"{environment.cpu_model()}|{os.cpu_count()}|{framework}|{precision}"
    source = cpu_peak_source(precision)
    _MEASURERS[source] = (key, measure)
    cached = cached_cpu_peak(key)
    if cached is None:
        cached = store_cpu_peak(key, best_of(measure))
    return cached, source


def upper_bound(peak: tuple[float | None, str], achieved: float | None) -> tuple[float | None, str]:
    """``peak``, or — when it is a CPU peak this process measured and a run's ``achieved``
    FLOP/s exceeds it — the peak measured again now and the cache raised to it: a cached peak
    measured while the machine was busy must not make MFU exceed 100 %. GPU peaks (datasheet
    figures) are returned as they are: exceeding one is a measuring error to show, not fix."""
    flops, source = peak
    if flops is None or achieved is None or achieved <= flops or source not in _MEASURERS:
        return peak
    key, measure = _MEASURERS[source]
    raised = store_cpu_peak(key, max(flops, best_of(measure)))
    if raised > flops:
        source = f"{source}; measured again after a run exceeded {flops / 1e12:.3g} TFLOP/s"
    return raised, source


def is_estimate(source: str | None) -> bool:
    """Whether a run's peak is a measured CPU estimate (its MFU is capped at 100 %)."""
    return bool(source) and str(source).startswith(ESTIMATE)


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
