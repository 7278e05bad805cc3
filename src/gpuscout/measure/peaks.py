"""Peak FLOP/s of the device, the denominator of MFU.

On a GPU the peak comes from its datasheet, through the sourced GPU catalog
(:mod:`gpuscout.catalog`). On a CPU no datasheet number is trustworthy (turbo, AVX frequency
offsets, SMT), so the peak is *measured* once per precision with a large matmul and cached on
disk. This module holds that cache and the matmul's size, so the size measured and the size the
run's ``peak_source`` names are one number.
"""

from __future__ import annotations

import json
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
