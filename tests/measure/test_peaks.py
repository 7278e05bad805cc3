"""The built-in GPU peak table: names TensorFlow reports map to the right dense rates."""

from __future__ import annotations

import pytest

from gpuscout.measure.peaks import gpu_peak, gpu_peak_tflops


@pytest.mark.parametrize(
    ("device_name", "row"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-40GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 3090 Ti", "RTX 3090 Ti"),
        ("NVIDIA GeForce RTX 3090", "RTX 3090"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "V100 PCIe"),
        ("Tesla T4", "T4"),
    ],
)
def test_device_names_match(device_name: str, row: str) -> None:
    found = gpu_peak(device_name)
    assert found is not None and found.name == row


def test_unknown_gpu() -> None:
    assert gpu_peak("NVIDIA GeForce GTX 1080") is None


def test_mixed_precision_uses_fp32_accumulate_rate_not_the_headline() -> None:
    row = gpu_peak("NVIDIA GeForce RTX 4090")
    assert row is not None
    assert gpu_peak_tflops(row, "mixed_float16", tf32=True)[0] == 165.2  # not 330.3


def test_a100_rates_by_precision() -> None:
    row = gpu_peak("NVIDIA A100-SXM4-40GB")
    assert row is not None
    assert gpu_peak_tflops(row, "fp32", tf32=True)[0] == 156.0
    assert gpu_peak_tflops(row, "fp32", tf32=False)[0] == 19.5  # not 9.7, which is FP64
    assert gpu_peak_tflops(row, "mixed_bfloat16", tf32=True)[0] == 312.0


def test_v100_has_no_bf16_or_tf32() -> None:
    row = gpu_peak("Tesla V100-SXM2-16GB")
    assert row is not None
    assert gpu_peak_tflops(row, "fp32", tf32=True)[0] == 15.7
    rate, label = gpu_peak_tflops(row, "mixed_bfloat16", tf32=False)
    assert rate == 15.7 and "emulated" in label
