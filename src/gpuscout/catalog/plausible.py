"""Physical plausibility of catalog rows: ranges by field, ratios between fields, and how far a
user's row strays from the shipped row of the same GPU.

Why: the types alone let a unit typo through. A ``rtx-4090`` row with
``memory_bandwidth_gb_per_s=1.008`` (TB/s written in the GB/s column) was accepted, entered the
calibration and moved the fitted efficiencies from 95/80/49 % to 35/67/100 % and the H100
prediction from 3,403 to 5,808 images/s (issue 17, under the bandwidth-ratio model of the
time). Every GPU and price row, shipped or the
user's, is checked here when the catalog loads; an impossible row is refused in one line naming
the file, line, column, value and range, with the unit fix when one is likely. A user's row that
is possible but more than :data:`WARN_FACTOR` away from the shipped row is loaded with a
warning, not refused: an overclocked or cut-down card is real.

The ranges are wide on purpose (they refuse what no GPU can be, not what is unusual): every
shipped row lies well inside them, which tests/catalog/test_data.py checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from gpuscout.catalog.models import TENSOR_RATES, Gpu, Price
from gpuscout.core.errors import UserError

# A user's row this many times above or below the shipped row of the same GPU, on any number, is
# worth a warning: a datasheet figure and a measured or overclocked one differ by tens of
# percent; 2x is a unit, a sparse headline, or another card.
WARN_FACTOR = 2.0


@dataclass(frozen=True)
class Range:
    """Inclusive bounds of a column, its unit, and the units a value outside them may be in:
    (factor that turns such a value into the column's unit, that unit's name)."""

    low: float
    high: float
    unit: str
    misread: tuple[tuple[float, str], ...] = ()

    def text(self) -> str:
        return f"{self.low:,g}..{self.high:,g} {self.unit}"


_RATE_MISREAD = ((1e-3, "GFLOP/s"), (1e3, "PFLOP/s"))
_TENSOR_MISREAD = ((0.5, "a 2:4-sparse headline"), *_RATE_MISREAD)
# Dense TFLOP/s. The tensor ceilings sit ~2x above the fastest shipped part (B200: 2,250 dense
# FP16/BF16, 4,500 FP8, 9,000 FP4), so the next generation fits and a sparse or PFLOP/s typo
# does not.
RANGES: dict[str, Range] = {
    "fp32_tflops": Range(0.5, 500, "TFLOP/s", _RATE_MISREAD),
    "fp64_tflops": Range(0.01, 500, "TFLOP/s", _RATE_MISREAD),
    "fp64_tensor_tflops": Range(0.01, 500, "TFLOP/s", _RATE_MISREAD),
    "tf32_tensor_tflops": Range(0.5, 5_000, "TFLOP/s", _TENSOR_MISREAD),
    "fp16_tensor_fp32acc_tflops": Range(0.5, 5_000, "TFLOP/s", _TENSOR_MISREAD),
    "fp16_tensor_fp16acc_tflops": Range(0.5, 5_000, "TFLOP/s", _TENSOR_MISREAD),
    "bf16_tensor_tflops": Range(0.5, 5_000, "TFLOP/s", _TENSOR_MISREAD),
    "fp8_tensor_tflops": Range(0.5, 10_000, "TFLOP/s", _TENSOR_MISREAD),
    "fp4_tensor_tflops": Range(0.5, 20_000, "TFLOP/s", _TENSOR_MISREAD),
    "memory_gb": Range(
        1, 1_000, "GB", ((1e3, "TB"), (1e-3, "MB"), (1 / 1024, "MiB"), (1e-9, "bytes"))
    ),
    "memory_bandwidth_gb_per_s": Range(50, 20_000, "GB/s", ((1e3, "TB/s"),)),
    "nvlink_gb_per_s_per_direction": Range(1, 10_000, "GB/s", ((1e3, "TB/s"),)),
    "nvlink_gb_per_s_total": Range(1, 20_000, "GB/s", ((1e3, "TB/s"),)),
    "boost_clock_mhz": Range(100, 5_000, "MHz", ((1e3, "GHz"),)),
    # MB of L2 (2**20 bytes): shipped GPUs hold 4 (T4) to 128 (RTX PRO 6000 Blackwell); a value
    # in KB (deviceQuery's "L2 Cache Size" divided by 1024) or bytes is refused with the fix.
    "l2_cache_mb": Range(0.25, 1_024, "MB", ((1 / 1024, "KB"), (1 / 1024**2, "bytes"))),
    "sm_count": Range(1, 1_000, "SMs"),
    "cuda_cores": Range(16, 100_000, "cores"),
    "tdp_w": Range(20, 2_000, "W", ((1e3, "kW"),)),
    "launch_price_usd": Range(50, 1_000_000, "USD", ((1e3, "thousands of USD"),)),
}
PRICE_RANGES: dict[str, Range] = {
    # Per GPU-hour: the cheapest community-cloud card is cents, a B200 a few dollars.
    "usd_per_gpu_hour": Range(0.01, 200, "USD per GPU-hour", ((1e-2, "cents"),)),
    "usd_per_gpu": Range(10, 1_000_000, "USD per GPU", ((1e3, "thousands of USD"),)),
}
# FP32 FLOP per byte of memory traffic (fp32_tflops x 1000 / memory_bandwidth_gb_per_s): the
# shipped GPUs lie between 12 (A100) and 106 (L40S). Outside this range one of the two columns
# is in another unit.
FLOP_PER_BYTE = (2.0, 400.0)
# Rates that tensor cores (or FP64 units) have, when the row says so (0 = lacks them).
_TENSOR = tuple(
    r for r in TENSOR_RATES if r not in ("fp64_tflops", "fp64_tensor_tflops", "fp32_tflops")
)
_TOLERANCE = 1.001  # datasheets round
# A tensor rate may sit this far below fp32_tflops: GeForce cards run dense TF32 at exactly the
# FP32 rate, so a user's measured or overclocked fp32_tflops beside the datasheet's TF32 figure
# is a few percent above it; a unit error is orders of magnitude.
_FP32_SLACK = 1.25


def _fmt(value: float) -> str:
    if abs(value) >= 1e6 and value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # a byte count as deviceQuery prints it, not 4.1943e+07
    return f"{value:,.6g}".replace(",", "") if abs(value) < 1e6 else f"{value:g}"


def _digits(value: float) -> int:
    """Significant digits of a value as written (1008 -> 3, 24.576 -> 5)."""
    return len(f"{value:.6g}".split("e")[0].replace(".", "").strip("0"))


def _unit_fix(value: float, rng: Range, column: str) -> str:
    """How the value would read in the column's unit, when another unit explains it. Of
    several that would, the one giving the roundest figure (24576 -> 24 GB, from MiB, not
    24.576 from MB); on a tie, the first listed."""
    fits = [(f, unit) for f, unit in rng.misread if rng.low <= value * f <= rng.high]
    if not fits:
        return f"give {column} in {rng.unit} (see the field table in the catalog README)"
    factor, unit = min(fits, key=lambda fit: _digits(value * fit[0]))
    fixed = _fmt(value * factor)
    if unit.startswith("a 2:4"):
        return f"{_fmt(value)} looks like {unit}; the column is dense {rng.unit}: write {fixed}"
    return f"{_fmt(value)} looks like {unit}; the column is {rng.unit}: write {fixed}"


def _where(path: Path | str, line: int, column: str | None = None) -> str:
    return f"{path}: line {line}" + (f", column '{column}'" if column else "")


def check_gpu(gpu: Gpu, path: Path | str, line: int) -> None:
    """UserError (one line) when the row is not a physically possible GPU."""
    for column, rng in RANGES.items():
        value = getattr(gpu, column)
        if value is None or value == 0:  # unknown, or the feature is absent ('none')
            continue
        if not math.isfinite(value):
            raise UserError(
                f"{_where(path, line, column)}: {value} is not a finite number.",
                f"give {column} in {rng.unit} ({rng.text()}).",
            )
        if not rng.low <= value <= rng.high:
            raise UserError(
                f"{_where(path, line, column)}: {_fmt(value)} is outside {rng.text()} "
                f"for {gpu.id}.",
                _unit_fix(value, rng, column) + ".",
            )
    _ratios(gpu, path, line)


def _ratios(gpu: Gpu, path: Path | str, line: int) -> None:
    fp32 = gpu.fp32_tflops
    for column in _TENSOR:
        rate = getattr(gpu, column)
        if rate and rate * _FP32_SLACK < fp32:
            raise UserError(
                f"{_where(path, line, 'fp32_tflops')}: {_fmt(fp32)} TFLOP/s is above "
                f"{column} ({_fmt(rate)}) for {gpu.id}; tensor cores are never slower than the "
                "FP32 CUDA cores.",
                "check both columns: fp32_tflops is the CUDA-core rate, tensor columns are "
                "dense TFLOP/s.",
            )
    fp16 = max(gpu.fp16_tensor_fp32acc_tflops or 0.0, gpu.bf16_tensor_tflops or 0.0)
    for low_name, low, high_name in (
        ("fp16/bf16 tensor", fp16, "fp8_tensor_tflops"),
        ("fp8_tensor_tflops", gpu.fp8_tensor_tflops or 0.0, "fp4_tensor_tflops"),
    ):
        high = getattr(gpu, high_name)
        if low and high and high * _TOLERANCE < low:
            raise UserError(
                f"{_where(path, line, high_name)}: {_fmt(high)} TFLOP/s is below the "
                f"{low_name} rate ({_fmt(low)}) for {gpu.id}; a narrower format is never "
                "slower.",
                "check the column against the datasheet's dense figures.",
            )
    if gpu.fp64_tflops and gpu.fp64_tflops > fp32 * _TOLERANCE:
        raise UserError(
            f"{_where(path, line, 'fp64_tflops')}: {_fmt(gpu.fp64_tflops)} TFLOP/s is above "
            f"fp32_tflops ({_fmt(fp32)}) for {gpu.id}; FP64 CUDA cores are never faster than "
            "FP32 ones.",
            "put the FP64 tensor-core rate in fp64_tensor_tflops.",
        )
    per_byte = fp32 * 1e3 / gpu.memory_bandwidth_gb_per_s
    low, high = FLOP_PER_BYTE
    if not low <= per_byte <= high:
        raise UserError(
            f"{_where(path, line, 'memory_bandwidth_gb_per_s')}: {_fmt(fp32)} TFLOP/s FP32 "
            f"over {_fmt(gpu.memory_bandwidth_gb_per_s)} GB/s is {per_byte:,.3g} FLOP per "
            f"byte for {gpu.id}; GPUs lie between {low:g} and {high:g}.",
            "one of fp32_tflops (TFLOP/s) and memory_bandwidth_gb_per_s (GB/s) is in another unit.",
        )


def check_price(price: Price, path: Path | str, line: int) -> None:
    """UserError (one line) when a price is outside what any GPU costs."""
    for column, rng in PRICE_RANGES.items():
        value = getattr(price, column)
        if value is not None and not rng.low <= value <= rng.high:
            fix = _unit_fix(value, rng, column)
            if column == "usd_per_gpu_hour" and price.gpus_per_instance > 1:
                fix += f", or divide the instance price by {price.gpus_per_instance} GPUs"
            raise UserError(
                f"{_where(path, line, column)}: {_fmt(value)} is outside {rng.text()} for "
                f"{price.gpu_id}.",
                fix + ".",
            )


def differences(user: Gpu, shipped: Gpu, path: Path | str, line: int) -> str | None:
    """A warning when the user's row is more than WARN_FACTOR away from the shipped row of the
    same GPU on any number (both known and non-zero), else None."""
    far = []
    for column in RANGES:
        mine, theirs = getattr(user, column), getattr(shipped, column)
        if not mine or not theirs:
            continue
        ratio = mine / theirs
        if ratio > WARN_FACTOR or ratio < 1 / WARN_FACTOR:
            far.append(f"{column} {_fmt(mine)} (shipped {_fmt(theirs)}, {ratio:.3g}x)")
    if not far:
        return None
    return (
        f"{_where(path, line)}: your {user.id} row differs from the shipped row by more than "
        f"{WARN_FACTOR:g}x: {'; '.join(far)}. Check the units; it replaces the shipped row in "
        "every prediction, cost and calibration."
    )
