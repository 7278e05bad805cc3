"""Which peak a precision uses: the denominators of MFU and of every audit."""

from __future__ import annotations

from gpuscout.catalog import load_catalog, peak_tflops
from gpuscout.catalog.rates import ridge_points


def test_mixed_precision_uses_fp32_accumulate_rate_not_the_headline() -> None:
    gpu = load_catalog().gpus["rtx-4090"]
    assert peak_tflops(gpu, "mixed_float16")[0] == 165.2  # not 330.3


def test_a100_rates_by_precision() -> None:
    gpu = load_catalog().gpus["a100-40gb-sxm"]
    assert peak_tflops(gpu, "fp32", tf32=True)[0] == 156.0
    assert peak_tflops(gpu, "fp32", tf32=False)[0] == 19.5
    assert peak_tflops(gpu, "mixed_bfloat16")[0] == 312.0


def test_v100_has_no_bf16_or_tf32() -> None:
    gpu = load_catalog().gpus["v100-sxm2-16gb"]
    assert peak_tflops(gpu, "fp32", tf32=True)[0] == 15.7
    rate, label = peak_tflops(gpu, "mixed_bfloat16")
    assert rate == 15.7 and "no BF16 tensor cores" in label


def test_ridge_point_is_flops_over_bandwidth() -> None:
    gpu = load_catalog().gpus["a100-80gb-sxm"]
    assert ridge_points(gpu)["fp16_bf16"] == round(312e12 / 2039e9, 1)
    assert "fp8" not in ridge_points(gpu)  # no FP8 on Ampere
