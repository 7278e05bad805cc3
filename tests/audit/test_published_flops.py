"""Each published ResNet-50 result is credited with the FLOPs of the network its source trains
(issue 41's variants file): v1 for tf_cnn_benchmarks, v1.5 for NVIDIA's and Lambda's PyTorch
results, each the registry's exact count (not one approximate 24.6 GFLOP for all)."""

from __future__ import annotations

import pytest

from gpuscout.audit.flops import FALLBACK, workload_flops
from gpuscout.audit.published import _flops
from gpuscout.catalog import load_catalog


def test_each_resnet50_row_is_credited_with_its_own_networks_flops() -> None:
    rows = [r for r in load_catalog().published if r.workload == "resnet50"]
    v1 = workload_flops("resnet50").flops_per_sample
    v15 = workload_flops("resnet50-v1.5").flops_per_sample
    assert v15 / v1 == pytest.approx(1.06, abs=0.001)
    by_source = {r.source_id: _flops(r) for r in rows}
    assert by_source["lambda-tf"] == v1  # tf_cnn_benchmarks --model=resnet50
    assert by_source["nvidia-dle-pt"] == v15 and by_source["lambda-pt-v1"] == v15
    assert FALLBACK["resnet50-v1.5"].flops_per_sample == v15  # the table without the registry
