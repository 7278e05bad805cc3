"""The CPU peak (MFU's denominator on a CPU): the source a run stores names the matmul that
was actually measured, per precision (real TensorFlow, a real 1024x1024 matmul)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    assert source == peaks.cpu_peak_source("mixed_bfloat16")
    assert source.startswith("estimate: measured matmul peak: best mixed_bfloat16 1024x1024")
    again, _ = runtime.device_peak_flops(tf, device, "mixed_bfloat16")
    assert again == flops  # cached: measured once, the same figure after


def test_the_cpu_peak_is_an_upper_bound_raised_when_a_run_exceeds_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A peak cached low (measured while the machine was busy; planted here as a thousandth
    of the real figure, far below what even a loaded machine measures) is kept as the best of
    several rounds, never lowered, and measured again, with a real NumPy matmul, the moment a
    run goes faster than it."""
    import numpy as np

    cache = tmp_path / "cpu_peaks.json"
    monkeypatch.setattr(peaks, "_cache_file", lambda: cache)
    a = np.ones((256, 256), dtype=np.float32)
    rounds: list[float] = []

    def matmul() -> float:
        rounds.append(peaks.matmul_flops(256, lambda: a @ a, tries=3))
        return rounds[-1]

    real, source = peaks.cpu_peak("numpy", "fp32", matmul)
    assert len(rounds) == peaks.CPU_PEAK_ROUNDS and real == max(rounds) > 0
    assert peaks.is_estimate(source) and not peaks.is_estimate("H100 SXM bf16 (datasheet)")
    assert peaks.store_cpu_peak("k", 4e9) == 4e9 and peaks.store_cpu_peak("k", 1e9) == 4e9
    key = next(k for k in json.loads(cache.read_text()) if "numpy" in k)
    cache.write_text(json.dumps({key: real / 1000}))  # measured under a heavy load
    low, _ = peaks.cpu_peak("numpy", "fp32", matmul)
    assert low == real / 1000  # cached: not measured again until a run exceeds it
    assert peaks.upper_bound((low, source), low / 2) == (low, source)  # below: kept
    raised, said = peaks.upper_bound((low, source), low * 2)
    assert raised > low and "measured again" in said  # the real matmul: ~1000x the plant
    assert peaks.cached_cpu_peak(key) == raised
    gpu = (1e15, "H100 SXM bf16 (datasheet)")
    assert peaks.upper_bound(gpu, 2e15) == gpu  # a datasheet peak is not re-measured
