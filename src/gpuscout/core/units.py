"""Unit conventions: everything is stored in SI (seconds, bytes, FLOP, samples/s).

Human units are chosen only when rendering, here, so that no stored number is ever rounded.
Rendering never shows more digits than a number has: a derived quantity (a prediction, a
fitted efficiency, a price of a predicted job) is printed to three significant figures, so
"50.7 T samples", never "50,708,086,774,116 samples" whose last digits differ from one CPU's
floating-point library to another's. Exact counts (an epoch of 1,281,167 images) are printed
in full by their callers.
"""

from __future__ import annotations

import math

SIGNIFICANT = 3  # what a derived quantity is rendered with
_COUNT_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6))


def round_sig(value: float, digits: int = SIGNIFICANT) -> float:
    """``value`` rounded to ``digits`` significant figures (0, inf and nan unchanged)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def fmt_sig(value: float, digits: int = SIGNIFICANT) -> str:
    """``value`` to ``digits`` significant figures, with thousands separators and never an
    exponent: 121.6 -> '122', 1076 -> '1,080', 0.4263 -> '0.426', 3.0 -> '3.00'."""
    rounded = round_sig(value, digits)
    if rounded == 0 or not math.isfinite(rounded):
        return f"{rounded:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def fmt_count(value: float, digits: int = SIGNIFICANT) -> str:
    """A large derived count with an SI prefix from a million up: 50,708,086,774,116 ->
    '50.7 T', 14,085,580 -> '14.1 M', 46,000 -> '46,000'."""
    rounded = round_sig(value, digits)
    for prefix, size in _COUNT_PREFIXES:
        if abs(rounded) >= size:
            return f"{fmt_sig(rounded / size, digits)} {prefix}"
    return fmt_sig(rounded, digits)


def fmt_seconds(seconds: float) -> str:
    """A duration, never finer than three significant figures: 840 µs, 12.3 ms, 4.56 s,
    3 min 20 s, 24.2 min, 122 h."""
    if round_sig(seconds * 1e6) < 1000:
        return f"{round_sig(seconds * 1e6):g} µs"
    if round_sig(seconds * 1e3) < 1000:
        return f"{round_sig(seconds * 1e3):g} ms"
    if round_sig(seconds) < 120:
        return f"{round_sig(seconds):g} s"
    if seconds < 600:
        minutes, secs = divmod(round(seconds), 60)
        return f"{minutes} min {secs:02d} s"
    if round_sig(seconds / 60) < 180:
        return f"{round_sig(seconds / 60):g} min"
    return f"{fmt_sig(seconds / 3600)} h"


def fmt_hours(hours: float) -> str:
    """A job's wall time given in hours (see :func:`fmt_seconds`)."""
    return fmt_seconds(hours * 3600)


def fmt_usd(usd: float) -> str:
    """A derived amount of money to three significant figures: $727, $1,080, $0.0213."""
    if 0 < usd < 0.01:
        return "< $0.01"
    return f"${fmt_sig(usd)}"


def fmt_bytes(n: float) -> str:
    """Bytes in binary units (GiB, MiB) as memory is usually quoted."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_gb(gb: float) -> str:
    """Memory a step needs, in decimal GB as the catalog quotes GPUs, a small model's in MB
    (not "0.0 GB")."""
    return f"{gb:.1f} GB" if gb >= 0.1 else f"{gb * 1e3:.2g} MB"


def fmt_rate(samples_per_second: float) -> str:
    """A throughput to three significant figures: 48,000, 667, 14.1 M."""
    return fmt_count(samples_per_second)


def fmt_flops(flop_per_second: float) -> str:
    """FLOP/s in the largest unit that keeps the number readable."""
    for unit, size in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if flop_per_second >= size:
            return f"{flop_per_second / size:.3g} {unit}"
    return f"{flop_per_second / 1e6:.3g} MFLOP/s"


def fmt_percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"
