"""Audit verdicts: the articles' ResNet-50 table and spec claims, against physics and data."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from gpuscout.audit import SpecClaim, SpeedClaim, audit, audit_spec, audit_speed, read_claims
from gpuscout.audit.flops import FALLBACK, workload_flops
from gpuscout.catalog import Catalog, load_catalog
from gpuscout.core.errors import UserError

EXAMPLES = Path(__file__).parents[2] / "examples" / "article_claims.csv"


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


# The articles' table: ImageNet epoch, batch 256, mixed precision.
ARTICLE = [
    ("rtx-3090", 87, "impossible", 14_726, 71.0),
    ("rtx-4090", 62, "impossible", 20_664, 165.2),
    ("a100-40gb", 49, "impossible", 26_146, 312.0),
    ("a100-80gb", 49, "impossible", 26_146, 312.0),
    ("H100 80GB", 31, "implausible", 41_328, 989.4),
]


@pytest.mark.parametrize(("gpu", "seconds", "verdict", "sps", "peak"), ARTICLE)
def test_article_resnet50_table(
    cat: Catalog, gpu: str, seconds: float, verdict: str, sps: float, peak: float
) -> None:
    claim = SpeedClaim(gpu, "resnet50", "mixed_float16", epoch_seconds=seconds)
    v = audit_speed(claim, cat)
    assert v.verdict == verdict
    n = v.numbers
    assert n["implied_samples_per_second_per_gpu"] == pytest.approx(sps, abs=1)
    assert n["peak_tflops"] == peak
    assert n["implied_tflops_per_gpu"] == pytest.approx(sps * 23.1478e9 / 1e12, rel=1e-3)
    assert isinstance(n["best_published_mfu"], float) and n["best_published_mfu"] < 0.5
    assert any("best published result on this GPU" in r for r in v.reasons)
    assert any("1,281,167 images" in a for a in v.assumptions)


def test_the_examples_file_gives_every_article_row_a_verdict(cat: Catalog) -> None:
    verdicts = audit([c for _, c in read_claims(EXAMPLES)], cat)
    speed = [v.verdict for v in verdicts if v.kind == "speed"]
    assert speed == ["impossible"] * 4 + ["implausible"]


def test_published_speeds_are_plausible_and_tenfold_more_is_not(cat: Catalog) -> None:
    ok = audit_speed(SpeedClaim("a100-40gb-sxm", "resnet50", "mixed_float16", None, 1700), cat)
    assert ok.verdict == "plausible"
    fast = audit_speed(SpeedClaim("a100-40gb-sxm", "resnet50", "mixed_float16", None, 6000), cat)
    assert fast.verdict == "implausible"  # 45% MFU: above the best published 35%


def test_several_gpus_share_the_claimed_throughput(cat: Catalog) -> None:
    one = audit_speed(SpeedClaim("h100-sxm", "resnet50", "mixed_float16", None, 20_000), cat)
    eight = audit_speed(
        SpeedClaim("h100-sxm", "resnet50", "mixed_float16", None, 20_000, gpus=8), cat
    )
    assert one.verdict == "implausible" and eight.verdict == "plausible"
    assert eight.numbers["implied_samples_per_second_per_gpu"] == 2500


def test_unstated_precision_is_judged_at_the_fastest_rate(cat: Catalog) -> None:
    v = audit_speed(SpeedClaim("a100-40gb-sxm", "resnet50", None, 49), cat)
    assert v.numbers["peak_tflops"] == 312
    assert any("precision not stated" in a for a in v.assumptions)


def test_a_speed_claim_needs_exactly_one_speed(cat: Catalog) -> None:
    with pytest.raises(UserError, match="exactly one"):
        audit_speed(SpeedClaim("t4", "resnet50", "fp32"), cat)
    with pytest.raises(
        UserError, match=re.escape("unknown workload 'resnet5'. Did you mean 'resnet50'")
    ):
        audit_speed(SpeedClaim("t4", "resnet5", "fp32", 100), cat)


def test_fp32_is_nine_point_seven_is_the_fp64_rate(cat: Catalog) -> None:
    v = audit_spec(SpecClaim("a100-40gb", "fp32_tflops", "9.7"), cat)
    assert v.verdict == "contradicted"
    assert v.numbers["fp32_tflops"] == 19.5
    assert "FP64 (9.7)" in v.reasons[-1]
    assert "nvidia-a100-datasheet" in v.sources[0]


@pytest.mark.parametrize(
    ("gpu", "field", "value", "verdict", "hint"),
    [
        ("a100-80gb", "fp16", "~1000", "contradicted", "H100 SXM5 80GB"),
        ("rtx-4090", "fp32", "35", "contradicted", "GeForce RTX 3090's FP32"),
        ("h100-sxm", "bf16_tensor_tflops", "1979", "contradicted", "2:4 sparsity"),
        ("rtx-4090", "tf32", "no", "contradicted", "has tf32"),
        ("rtx-4090", "nvlink", "no", "confirmed", "does not have nvlink"),
        ("rtx-4090", "fp16", "330", "confirmed", "FP16 accumulate"),
        ("a100-40gb", "memory_bandwidth_gb_per_s", "1550", "confirmed", "1555"),
        ("rtx-5090", "fp8", "419", "unverifiable", "no FP8 tensor figure"),
    ],
)
def test_spec_claims(
    cat: Catalog, gpu: str, field: str, value: str, verdict: str, hint: str
) -> None:
    v = audit_spec(SpecClaim(gpu, field, value), cat)
    assert v.verdict == verdict
    assert any(hint in r for r in v.reasons), v.reasons


def test_bad_spec_claims(cat: Catalog) -> None:
    with pytest.raises(UserError, match="unknown spec field 'fp23'"):
        audit_spec(SpecClaim("t4", "fp23", "8"), cat)
    with pytest.raises(UserError, match="is not a number"):
        audit_spec(SpecClaim("t4", "fp32", "fast"), cat)


def test_claims_file_errors_name_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "claims.csv"
    path.write_text("gpu,workload,precision,epoch_seconds\nrtx-3090,resnet50,fp16,87\n")
    with pytest.raises(UserError, match=r"line 2, column 'precision': unknown precision 'fp16'"):
        read_claims(path)
    path.write_text("gpu,workload,epoch_seconds\nrtx-3090,resnet50,soon\n")
    with pytest.raises(UserError, match=r"line 2, column 'epoch_seconds': not a positive number"):
        read_claims(path)
    path.write_text("gpu,speed\nrtx-3090,fast\n")
    with pytest.raises(UserError, match="unknown column 'speed'"):
        read_claims(path)


def test_fallback_flops_equal_the_workload_registry() -> None:
    for name, fallback in FALLBACK.items():
        live = workload_flops(name)
        assert live.flops_per_sample == pytest.approx(fallback.flops_per_sample, rel=1e-9)
        assert live.epoch_samples == fallback.epoch_samples


def test_bert_large_and_sequence_length_scale_the_flops() -> None:
    base = workload_flops("bert-base").flops_per_sample
    assert workload_flops("bert-base", 512).flops_per_sample > 4 * base
    assert workload_flops("bert-large").flops_per_sample > 3 * base


def test_a_family_name_is_judged_on_the_most_favourable_part(cat: Catalog) -> None:
    """'A100' fits four parts: a claim is only called wrong if it is wrong for all of them."""
    v = audit_spec(SpecClaim("A100", "bandwidth", "2039"), cat)
    assert v.verdict == "confirmed" and v.gpu_id == "a100-80gb-sxm"
    assert "fits 4 GPUs" in v.assumptions[0]
    v = audit_spec(SpecClaim("A100", "fp32", "9.7"), cat)
    assert v.verdict == "contradicted"
    speed = audit_speed(SpeedClaim("v100", "resnet50", "mixed_float16", None, 900), cat)
    assert speed.gpu_id.startswith("v100-sxm2") and speed.numbers["peak_tflops"] == 125
    with pytest.raises(UserError, match="unknown GPU"):
        audit_spec(SpecClaim("v10", "fp32", "1"), cat)


@pytest.mark.parametrize(
    ("field", "value", "claimed"),
    [
        ("bandwidth", "1.55 TB/s", 1550),
        ("bandwidth", "1,555 GB/s", 1555),
        ("fp16", "~0.312 PFLOPS", 312),
        ("memory", "40GB", 40),
        ("price", "$1,599", 1599),
    ],
)
def test_claimed_values_may_carry_units(
    cat: Catalog, field: str, value: str, claimed: float
) -> None:
    v = audit_spec(SpecClaim("a100-40gb-sxm", field, value), cat)
    assert v.numbers["claimed"] == pytest.approx(claimed)


def test_a_unit_that_does_not_fit_the_field_is_an_error(cat: Catalog) -> None:
    with pytest.raises(UserError, match="unit 'gb' does not fit fp32_tflops"):
        audit_spec(SpecClaim("a100-40gb-sxm", "fp32", "19.5 GB"), cat)


def test_without_the_measuring_code_the_fallback_counts_are_used(
    cat: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gpuscout.workloads", None)  # import now fails
    assert workload_flops("resnet50") is FALLBACK["resnet50"]
    v = audit_speed(SpeedClaim("rtx-3090", "resnet50", "mixed_float16", 87), cat)
    assert v.verdict == "impossible"
    with pytest.raises(UserError, match="without gpuscout's measuring code"):
        workload_flops("mlp")


# Issue 17: without --precision the bound applied was a V100 FP32 efficiency (68 % MFU) against
# the A100's tensor peak, so 8,000 images/s on one A100, 3.9x the best published result on it,
# was "plausible".
def test_an_unstated_precision_is_judged_at_the_most_plausible_one_and_says_so() -> None:
    from tests.conftest import run_cli

    r = run_cli(
        "audit", "--gpu", "a100-40gb", "--workload", "resnet50", "--samples-per-second", "8000",
        "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    (v,) = r.json()["verdicts"]
    assert v["verdict"] == "implausible"  # was "plausible"
    assert v["numbers"]["precision"] == "mixed_float16"
    assert v["numbers"]["best_published_mfu"] < 0.5  # the mixed-precision bound, not 68 % FP32
    (assumed,) = [a for a in v["assumptions"] if a.startswith("precision not stated")]
    assert "judged as mixed_float16, the precision under which the claim is most plausible" in (
        assumed
    )
    assert "fp32: 119% MFU" in assumed  # every precision tried is shown
    shown = run_cli(
        "audit", "--gpu", "a100-40gb", "--workload", "resnet50", "--samples-per-second", "8000",
        block_tf=True,
    )  # fmt: skip
    assert "precision not stated: judged as mixed_float16" in shown.out


@pytest.mark.parametrize(
    ("precision", "sps", "verdict"),
    [
        ("mixed_float16", 4200, "implausible"),  # 33 % MFU, under the 35 % bound, but 2.02x
        ("mixed_float16", 4000, "plausible"),  # 1.93x the best published on the A100 PCIe
        (None, 4200, "implausible"),
        (None, 2000, "plausible"),
    ],
)
def test_twice_the_best_published_on_the_same_gpu_is_implausible(
    cat: Catalog, precision: str | None, sps: float, verdict: str
) -> None:
    # The A100 PCIe: on the SXM4 part the best published (2,375, NVIDIA's revised TF figure)
    # doubled is already above the MFU bound, so the 2x rule could not be seen alone.
    v = audit_speed(SpeedClaim("a100-40gb-pcie", "resnet50", precision, None, sps), cat)
    assert v.numbers["best_published_on_gpu"] == 2075
    assert v.verdict == verdict
    if verdict == "implausible" and v.numbers["implied_mfu"] < v.numbers["best_published_mfu"]:
        assert "2x or more is implausible" in v.reasons[0]
