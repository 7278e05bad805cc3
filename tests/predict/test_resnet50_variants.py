"""Each published ResNet-50 source is modelled with the network its script trains (issue 41):
v1 (Keras' ``ResNet50``, tf_cnn_benchmarks' ``resnet50``) or v1.5 (NVIDIA's
DeepLearningExamples, Lambda's PyTorch benchmark), as ``data/resnet50_variants.csv`` says with
a quote of each script. No TensorFlow: the shipped profiles only."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.predict.calibration_points import (
    modelled_workload,
    published_points,
    source_variants,
)
from gpuscout.predict.profile import cached
from gpuscout.workloads import WORKLOADS, resnet50_forward_macs

PRECISIONS = ("fp32", "mixed_float16", "mixed_bfloat16")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_every_published_resnet50_source_has_a_sourced_variant(cat: Catalog) -> None:
    """A new ResNet-50 source must say which network it runs, not fall back to v1 silently;
    every row names a built-in workload and quotes its script."""
    sources = {r.source_id for r in cat.published if r.workload == "resnet50"}
    variants = source_variants()
    assert sources <= {s for s, w in variants if w == "resnet50"}, sources
    for (source, workload), profile in variants.items():
        assert workload == "resnet50" and profile in WORKLOADS, (source, profile)
    path = resources.files("gpuscout.predict") / "data" / "resnet50_variants.csv"
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):  # the quote itself: a row without one is not sourced
            label = "v1.5" if row["profile"] == "resnet50-v1.5" else "v1"
            assert row["source"].startswith(f"{label}. "), row["source_id"]
            assert "@" in row["source"], row["source_id"]  # repo@commit path


def test_the_points_use_their_sources_variant(cat: Catalog) -> None:
    points = [p for p in published_points(cat) if p.workload == "resnet50"]
    assert points
    for p in points:
        expected = "resnet50" if p.source_id == "lambda-tf" else "resnet50-v1.5"
        assert p.profile.workload == expected == modelled_workload(p.source_id, p.workload)
    # the source's own name stays (held-out families and groups read it)
    assert {p.workload for p in points} == {"resnet50"}
    # a source the file does not name keeps the default profile: Keras' v1
    assert modelled_workload("a-new-source", "resnet50") == "resnet50"
    assert modelled_workload("lambda-pt-v1", "bert-base") == "bert-base"


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_v15_profile_is_v1_with_the_stride_moved(precision: str) -> None:
    """Shipped at the resnet50 profile's shapes (batch 256, rescalable), with the same
    parameters and 231 M more multiply-adds an image forward (4.09 against 3.86 GMAC): the
    downsampling blocks' first 1x1 conv at 4x the pixels. Counted on the traced HLO, the
    step's convolutions do x1.06 the FLOPs and move about x1.05 the bytes."""
    v1 = cached("resnet50", {}, 256, precision)
    v15 = cached("resnet50-v1.5", {}, 256, precision)
    assert v1 is not None and v15 is not None and v15.per_sample is not None
    assert v15.params == v1.params and v15.param_bytes == v1.param_bytes
    extra = resnet50_forward_macs(224, 1000, stride_on_3x3=True) - resnet50_forward_macs(224, 1000)
    assert extra == 3 * 3 * (28 * 28 * 256 * 128) == 231_211_008  # 3 blocks, each 3x its v1 reduce
    assert v15.flops["matmul"] / v1.flops["matmul"] == pytest.approx(1.06, abs=0.002)
    assert 1.03 < v15.bytes["matmul"] / v1.bytes["matmul"] < 1.07
    assert v15.at_batch(128).batch == 128


def test_resnet50_is_still_keras_v1() -> None:
    """``--workload resnet50`` keeps meaning keras.applications.ResNet50 (v1); v1.5 is its own
    name."""
    assert WORKLOADS["resnet50"].flops_per_sample is not None
    assert WORKLOADS["resnet50"].training_flops_per_sample(
        WORKLOADS["resnet50"].resolve()
    ) == pytest.approx(6 * 3.858e9, rel=1e-3)
    v15 = WORKLOADS["resnet50-v1.5"]
    assert v15.training_flops_per_sample(v15.resolve()) == pytest.approx(6 * 4.089e9, rel=1e-3)
