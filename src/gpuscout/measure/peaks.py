"""Peak FLOP/s of the device, the denominator of MFU.

On a GPU the peak comes from its datasheet, through the sourced GPU catalog
(:mod:`gpuscout.catalog`). On a CPU no datasheet number is trustworthy (turbo, AVX frequency
offsets, SMT), so the peak is *measured* once per precision with a large matmul and cached on
disk. This module holds that cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import platformdirs


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
