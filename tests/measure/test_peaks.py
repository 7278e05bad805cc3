"""The CPU peak (MFU's denominator on a CPU): the source a run stores names the matmul that
was actually measured, per precision (real TensorFlow, a real 1024x1024 matmul)."""

from __future__ import annotations

from gpuscout.measure import peaks


def test_the_source_names_the_size_each_precision_measures() -> None:
    assert "fp32 2048x2048 matmul" in peaks.cpu_peak_source("fp32")
    for precision in ("mixed_float16", "mixed_bfloat16"):
        assert peaks.cpu_matmul_size(precision) == 1024
        assert f"{precision} 1024x1024 matmul" in peaks.cpu_peak_source(precision)


def test_a_measured_mixed_precision_peak_says_1024_not_2048() -> None:
    from gpuscout.measure.backends.tensorflow import runtime

    tf = runtime.import_tensorflow()
    device = runtime.resolve_device(tf, "CPU:0")
    flops, source = runtime.device_peak_flops(tf, device, "mixed_bfloat16")
    assert flops is not None and flops > 0
    assert source == "measured: best mixed_bfloat16 1024x1024 matmul on this CPU (cached)"
    again, _ = runtime.device_peak_flops(tf, device, "mixed_bfloat16")
    assert again == flops  # cached: measured once, the same figure after
