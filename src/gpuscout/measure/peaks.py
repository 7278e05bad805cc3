"""Peak FLOP/s of the device, the denominator of MFU.

On a GPU the peak comes from its datasheet: a small built-in table (dense tensor rates, carried
over with their sources from the project's researched reference data) until the full catalog
exists. On a CPU no datasheet number is trustworthy (turbo, AVX frequency offsets, SMT), so the
peak is *measured* once per precision with a large matmul and cached on disk.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import platformdirs

_WP_AMPERE = "NVIDIA Ampere GA102 whitepaper v2"
_WP_ADA = "NVIDIA Ada Lovelace architecture whitepaper"
_DS_A100 = "NVIDIA A100 datasheet"
_DS_H100 = "NVIDIA H100 datasheet (dense = sparse/2)"


@dataclass(frozen=True)
class GpuPeak:
    """Dense peak TFLOP/s; tensor rates with FP32 accumulate (what mixed precision uses)."""

    pattern: str  # regex on the device name TensorFlow reports
    name: str
    fp32: float
    tf32: float | None
    fp16_fp32acc: float
    bf16: float | None
    source: str


# Most specific patterns first. GeForce FP16/BF16 with FP32 accumulate is half the FP16-
# accumulate headline (e.g. RTX 4090: 165.2, not 330.3).
GPU_PEAKS: tuple[GpuPeak, ...] = (
    GpuPeak(r"H200", "H200", 66.9, 494.7, 989.4, 989.4, "NVIDIA H200 datasheet (dense)"),
    GpuPeak(r"H100.*PCIe", "H100 PCIe", 51.2, 378.0, 756.0, 756.0, _DS_H100),
    GpuPeak(r"H100", "H100 SXM", 66.9, 494.7, 989.4, 989.4, _DS_H100),
    GpuPeak(r"B200", "B200", 75.0, 1100.0, 2250.0, 2250.0, "NVIDIA HGX B200 spec (dense)"),
    GpuPeak(r"A100", "A100", 19.5, 156.0, 312.0, 312.0, _DS_A100),
    GpuPeak(r"L40S", "L40S", 91.6, 183.0, 362.0, 362.0, "NVIDIA L40S datasheet (dense)"),
    GpuPeak(r"\bL4\b", "L4", 30.3, 60.0, 121.0, 121.0, "NVIDIA L4 datasheet (dense)"),
    GpuPeak(r"A10G", "A10G", 35.0, 35.0, 70.0, 70.0, "reported, not from a datasheet"),
    GpuPeak(r"\bA10\b", "A10", 31.2, 62.5, 125.0, 125.0, "NVIDIA A10 datasheet (dense)"),
    GpuPeak(r"RTX 6000 Ada", "RTX 6000 Ada", 91.1, 182.1, 364.2, 364.2, "NVIDIA RTX 6000 Ada"),
    GpuPeak(r"RTX A6000", "RTX A6000", 38.7, 77.4, 154.8, 154.8, "NVIDIA RTX A6000 datasheet"),
    GpuPeak(r"5090", "RTX 5090", 104.8, 104.8, 209.5, 209.5, "NVIDIA RTX Blackwell whitepaper"),
    GpuPeak(r"4090", "RTX 4090", 82.6, 82.6, 165.2, 165.2, _WP_ADA),
    GpuPeak(r"3090 Ti", "RTX 3090 Ti", 40.0, 40.0, 80.0, 80.0, f"derived from {_WP_AMPERE}"),
    GpuPeak(r"3090", "RTX 3090", 35.6, 35.6, 71.0, 71.0, _WP_AMPERE),
    GpuPeak(r"V100.*PCIe", "V100 PCIe", 14.0, None, 112.0, None, "NVIDIA V100 datasheet"),
    GpuPeak(r"V100", "V100 SXM2", 15.7, None, 125.0, None, "NVIDIA V100 datasheet"),
    GpuPeak(r"\bT4\b", "T4", 8.1, None, 65.0, None, "NVIDIA T4 datasheet"),
)


def gpu_peak(device_name: str) -> GpuPeak | None:
    """The table row for a TensorFlow GPU device name, or None if it is not in the table."""
    for row in GPU_PEAKS:
        if re.search(row.pattern, device_name, flags=re.IGNORECASE):
            return row
    return None


def gpu_peak_tflops(row: GpuPeak, precision: str, tf32: bool) -> tuple[float, str]:
    """Peak for a precision, and which rate it is (TF32 when TensorFlow uses it for fp32)."""
    if precision == "mixed_bfloat16":
        if row.bf16 is None:
            return row.fp32, "FP32 (no BF16 tensor cores: bfloat16 is emulated)"
        return row.bf16, "BF16 tensor with FP32 accumulate, dense"
    if precision == "mixed_float16":
        return row.fp16_fp32acc, "FP16 tensor with FP32 accumulate, dense"
    if tf32 and row.tf32 is not None:
        return row.tf32, "TF32 tensor, dense (TensorFlow's default for fp32 on Ampere+)"
    return row.fp32, "FP32 (CUDA cores)"


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
