"""Which peak applies to a precision, and the figures derived from the datasheet rates.

Mixed precision trains on tensor cores with FP32 accumulate, so its peak is the FP32-accumulate
rate (on GeForce cards half the FP16-accumulate headline). float32 on Ampere and newer runs on
TF32 tensor cores when TensorFlow allows it (its default), so its peak is the TF32 rate.
"""

from __future__ import annotations

from gpuscout.catalog.models import Gpu


def peak_tflops(gpu: Gpu, precision: str, tf32: bool = True) -> tuple[float, str]:
    """Dense peak TFLOP/s for a Keras precision policy, and which rate that is."""
    if precision == "mixed_bfloat16":
        return _tensor_or_fp32(gpu, gpu.bf16_tensor_tflops, "BF16")
    if precision == "mixed_float16":
        return _tensor_or_fp32(gpu, gpu.fp16_tensor_fp32acc_tflops, "FP16")
    if tf32 and gpu.tf32_tensor_tflops:
        return gpu.tf32_tensor_tflops, "TF32 tensor, dense (TensorFlow's default for float32)"
    return gpu.fp32_tflops, "FP32 (CUDA cores)"


def _tensor_or_fp32(gpu: Gpu, rate: float | None, name: str) -> tuple[float, str]:
    if rate:
        return rate, f"{name} tensor with FP32 accumulate, dense"
    why = "rate unknown" if rate is None else f"no {name} tensor cores"
    return gpu.fp32_tflops, f"FP32 ({why}: {name} is not faster than float32 here)"


def ridge_points(gpu: Gpu) -> dict[str, float]:
    """FLOP per byte of memory traffic above which a kernel is compute-bound, per precision."""
    bandwidth = gpu.memory_bandwidth_gb_per_s * 1e9
    rates = {
        "fp32": gpu.fp32_tflops,
        "tf32": gpu.tf32_tensor_tflops,
        "fp16_bf16": gpu.fp16_tensor_fp32acc_tflops,
        "fp8": gpu.fp8_tensor_tflops,
    }
    return {k: round(v * 1e12 / bandwidth, 1) for k, v in rates.items() if v}


def training_tflops(gpu: Gpu) -> float:
    """The rate mixed-precision training can reach: BF16/FP16 tensor (FP32 acc) or FP32."""
    return max(gpu.bf16_tensor_tflops or 0.0, gpu.fp16_tensor_fp32acc_tflops or 0.0) or (
        gpu.fp32_tflops
    )
