"""Unit conventions: everything is stored in SI (seconds, bytes, FLOP, samples/s).

Human units are chosen only when rendering, here, so that no stored number is ever rounded.
"""

from __future__ import annotations


def fmt_seconds(seconds: float) -> str:
    """Seconds as a short human string: 840 µs, 12.3 ms, 4.56 s, 3 min 20 s, 2 h 05 min."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 3 * 3600:
        minutes, secs = divmod(round(seconds), 60)
        return f"{minutes} min {secs:02d} s"
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min"


def fmt_bytes(n: float) -> str:
    """Bytes in binary units (GiB, MiB) as memory is usually quoted."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_rate(samples_per_second: float) -> str:
    """A throughput with three significant figures and thousands separators."""
    if samples_per_second >= 1000:
        return f"{samples_per_second:,.0f}"
    return f"{samples_per_second:.3g}"


def fmt_flops(flop_per_second: float) -> str:
    """FLOP/s in the largest unit that keeps the number readable."""
    for unit, size in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if flop_per_second >= size:
            return f"{flop_per_second / size:.3g} {unit}"
    return f"{flop_per_second / 1e6:.3g} MFLOP/s"


def fmt_percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"
