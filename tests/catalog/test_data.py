"""The shipped catalog files: every row sourced, units sane, and the datasheet facts right."""

from __future__ import annotations

import datetime as dt

import pytest

from gpuscout.audit import SpecClaim, audit_spec
from gpuscout.audit.published import _flops
from gpuscout.catalog import Catalog, load_catalog, peak_tflops
from gpuscout.catalog.models import TENSOR_RATES


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


ISSUE_GPUS = [
    "rtx-3090",
    "rtx-3090-ti",
    "rtx-4090",
    "rtx-5090",
    "a100-40gb-sxm",
    "a100-40gb-pcie",
    "a100-80gb-sxm",
    "a100-80gb-pcie",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "l4",
    "l40s",
    "a10",
    "a10g",
    "t4",
    "v100-sxm2-16gb",
    "v100-pcie-16gb",
    "rtx-a6000",
    "rtx-6000-ada",
    # issue 18: the GPUs users weigh today
    "a40",
    "a30",
    "l40",
    "rtx-4080",
    "rtx-4080-super",
    "rtx-5080",
    "rtx-pro-6000-blackwell",
    "h100-nvl",
    "gh200",
]


def test_every_gpu_the_catalog_promises_is_there(cat: Catalog) -> None:
    assert set(ISSUE_GPUS) <= set(cat.gpus)
    assert all(cat.origin[g] == "built-in" for g in cat.gpus)


def test_every_row_has_a_source_and_a_retrieval_date(cat: Catalog) -> None:
    rows = [*cat.gpus.values(), *cat.prices, *cat.published, *cat.busbw]
    assert len(rows) > 100
    for row in rows:
        assert len(row.source) > 10, row
        assert dt.date(2026, 1, 1) <= row.retrieved_on <= dt.date(2026, 12, 31)


def test_units_are_sane(cat: Catalog) -> None:
    for g in cat.gpus.values():
        assert 5 < g.fp32_tflops < 200, g.id
        assert 8 <= g.memory_gb <= 300, g.id
        assert 200 <= g.memory_bandwidth_gb_per_s <= 10_000, g.id
        assert g.tdp_w is not None and 50 <= g.tdp_w <= 1500, g.id
        for column in TENSOR_RATES:
            value = getattr(g, column)
            if value and "fp64" not in column:
                assert value >= g.fp32_tflops, (g.id, column)  # tensor math beats CUDA cores
        if g.fp64_tflops:
            assert g.fp64_tflops <= g.fp32_tflops / 2 * 1.02, g.id  # datasheets round


def test_fp32_accumulate_never_beats_fp16_accumulate(cat: Catalog) -> None:
    for g in cat.gpus.values():
        acc32, acc16 = g.fp16_tensor_fp32acc_tflops, g.fp16_tensor_fp16acc_tflops
        if acc32 and acc16:
            assert acc32 <= acc16, g.id
            if g.market == "consumer":
                assert acc32 == pytest.approx(acc16 / 2, rel=0.01), g.id  # GeForce half rate


# Datasheet headline figures that include 2:4 sparsity: the catalog's dense rate must be half.
SPARSE_HEADLINES = [
    ("a100-40gb-sxm", "bf16_tensor_tflops", 624),
    ("h100-sxm", "bf16_tensor_tflops", 1979),
    ("h100-sxm", "fp8_tensor_tflops", 3958),
    ("h100-pcie", "bf16_tensor_tflops", 1513),
    ("b200", "bf16_tensor_tflops", 4500),
    ("b200", "fp4_tensor_tflops", 18000),
    ("l4", "fp16_tensor_fp32acc_tflops", 242),
    ("l40s", "fp8_tensor_tflops", 1466),
    ("a10", "fp16_tensor_fp32acc_tflops", 250),
    ("rtx-a6000", "fp16_tensor_fp16acc_tflops", 309.7),
    ("rtx-6000-ada", "fp8_tensor_tflops", 1457),
    ("rtx-5090", "fp4_tensor_tflops", 3352),
    ("a40", "bf16_tensor_tflops", 299.4),
    ("a30", "bf16_tensor_tflops", 330),
    ("a30", "tf32_tensor_tflops", 165),
    ("l40", "fp8_tensor_tflops", 724),
    ("h100-nvl", "bf16_tensor_tflops", 1671),
    ("h100-nvl", "fp8_tensor_tflops", 3341),
    ("gh200", "fp8_tensor_tflops", 3958),
    ("rtx-5080", "fp4_tensor_tflops", 1801),
    ("rtx-pro-6000-blackwell", "fp4_tensor_tflops", 4000),
    ("rtx-4080-super", "fp8_tensor_tflops", 836 / 2),  # '836 AI TOPS': FP8, sparse, FP16 acc
]


@pytest.mark.parametrize(("gpu", "column", "sparse"), SPARSE_HEADLINES)
def test_dense_rates_are_half_the_sparse_headlines(
    cat: Catalog, gpu: str, column: str, sparse: float
) -> None:
    dense = getattr(cat.gpus[gpu], column)
    assert dense < sparse
    assert dense == pytest.approx(sparse / 2, rel=0.01)


def test_h200_computes_exactly_like_h100_sxm(cat: Catalog) -> None:
    h100, h200 = cat.gpus["h100-sxm"], cat.gpus["h200"]
    for column in TENSOR_RATES:
        assert getattr(h200, column) == getattr(h100, column), column
    assert h200.memory_gb > h100.memory_gb
    assert h200.memory_bandwidth_gb_per_s > h100.memory_bandwidth_gb_per_s


def test_every_row_has_what_a_per_kernel_model_needs(cat: Catalog) -> None:
    """SMs, boost clock and L2 size on every shipped row, each with its source named (issue 18:
    whether a kernel's working set fits in L2 and how many waves of tiles it makes)."""
    for g in cat.gpus.values():
        assert g.sm_count and g.boost_clock_mhz and g.l2_cache_mb, g.id
        assert "L2" in g.source, g.id
        if g.cuda_cores and g.fp32_tflops and g.id != "a10g":  # a10g: reported figures only
            clock_ghz = g.fp32_tflops * 1e3 / (2 * g.cuda_cores)
            assert clock_ghz * 1e3 == pytest.approx(g.boost_clock_mhz, rel=0.06), g.id


L2_MB = {
    "rtx-3090": 6,
    "rtx-4090": 72,
    "rtx-5090": 96,
    "a100-40gb-sxm": 40,
    "a100-80gb-sxm": 40,
    "h100-sxm": 50,
    "h100-pcie": 50,
    "h200": 60,  # six HBM stacks: the driver reports 60 MB, not the H100 SXM's 50
    "b200": 126,
    "t4": 4,
    "v100-sxm2-16gb": 6,
    "l4": 48,
    "l40s": 96,
    "rtx-6000-ada": 96,
    "a30": 24,
    "rtx-4080": 64,
    "rtx-5080": 64,
    "gh200": 60,
}


@pytest.mark.parametrize(("gpu", "mb"), L2_MB.items())
def test_l2_sizes(cat: Catalog, gpu: str, mb: float) -> None:
    assert cat.gpus[gpu].l2_cache_mb == mb


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        ("72", "confirmed"),
        ("72 MB", "confirmed"),
        ("73728 KB", "confirmed"),
        ("96", "contradicted"),
    ],
)
def test_an_l2_claim_can_be_audited(cat: Catalog, value: str, verdict: str) -> None:
    """'The 4090 has 96 MB of L2' is the full AD102's figure, not the 4090's."""
    assert audit_spec(SpecClaim("rtx-4090", "l2", value), cat).verdict == verdict


def test_new_gpus_are_not_their_siblings(cat: Catalog) -> None:
    """The mix-ups the new rows are most exposed to."""
    l40, l40s = cat.gpus["l40"], cat.gpus["l40s"]
    assert l40.fp16_tensor_fp32acc_tflops == pytest.approx(
        l40s.fp16_tensor_fp32acc_tflops / 2, 0.01
    )
    assert l40.memory_bandwidth_gb_per_s == l40s.memory_bandwidth_gb_per_s
    h100, gh200, nvl = cat.gpus["h100-sxm"], cat.gpus["gh200"], cat.gpus["h100-nvl"]
    for column in TENSOR_RATES:
        if column not in ("fp64_tflops", "fp64_tensor_tflops"):
            assert getattr(gh200, column) == getattr(h100, column), column
    assert (gh200.memory_gb, gh200.memory_bandwidth_gb_per_s) == (96, 4000)  # the HBM3 part
    assert nvl.memory_gb == 94 and nvl.bf16_tensor_tflops < h100.bf16_tensor_tflops
    pro = cat.gpus["rtx-pro-6000-blackwell"]
    assert pro.market == "workstation" and pro.mig_max_instances == 4
    assert pro.fp16_tensor_fp32acc_tflops == pro.fp16_tensor_fp16acc_tflops  # full rate
    assert pro.fp16_tensor_fp32acc_tflops > 2 * cat.gpus["rtx-5090"].fp16_tensor_fp32acc_tflops
    a30 = cat.gpus["a30"]
    assert a30.fp32_tflops == 10.3 and a30.fp64_tflops == 5.2 and a30.mig_max_instances == 4
    assert "b300" not in cat.gpus  # no per-GPU datasheet yet: see the catalog README


def test_reference_values(cat: Catalog) -> None:
    for gpu in ("a100-40gb-sxm", "a100-40gb-pcie", "a100-80gb-sxm", "a100-80gb-pcie"):
        assert cat.gpus[gpu].fp32_tflops == 19.5  # not 9.7, the FP64 rate
        assert cat.gpus[gpu].fp64_tflops == 9.7
    assert cat.gpus["h100-sxm"].bf16_tensor_tflops == pytest.approx(989, abs=1)
    assert cat.gpus["rtx-4090"].fp16_tensor_fp32acc_tflops == pytest.approx(165, abs=0.5)
    assert cat.gpus["rtx-4090"].tf32_tensor_tflops == 82.6  # Ada has TF32 tensor cores
    assert cat.gpus["a100-80gb-sxm"].memory_bandwidth_gb_per_s == 2039
    assert cat.gpus["a100-80gb-pcie"].memory_bandwidth_gb_per_s == 1935
    assert cat.gpus["t4"].bf16_tensor_tflops == 0  # absent, not unknown
    assert cat.gpus["rtx-5090"].fp8_tensor_tflops is None  # unknown, not absent


def test_prices_are_plausible_and_dated_before_retrieval(cat: Catalog) -> None:
    providers = {p.provider for p in cat.prices}
    assert {"aws", "gcp", "azure", "lambda", "runpod"} <= providers
    assert any(p.kind == "spot" for p in cat.prices)
    for p in cat.prices:
        if p.usd_per_gpu_hour is not None:
            assert 0.05 < p.usd_per_gpu_hour < 20, p
        if p.observed_on:
            assert p.observed_on <= p.retrieved_on.isoformat(), p


def test_every_published_measurement_is_physically_possible(cat: Catalog) -> None:
    """A published result above the peak would mean a wrong peak, FLOP count or GPU id."""
    for row in cat.published:
        peak, _ = peak_tflops(cat.gpus[row.gpu_id], row.precision)
        mfu = row.throughput / row.gpu_count * _flops(row) / (peak * 1e12)
        assert 0.02 < mfu < 0.75, (row.gpu, row.workload, row.precision, mfu)


def test_price_age_counts_from_the_observation(cat: Catalog) -> None:
    day = next(p for p in cat.prices if p.observed_on == "2026-09-25")
    assert day.age_days(dt.date(2026, 12, 2)) == 68
    month = next(p for p in cat.prices if p.observed_on == "2025-06")
    assert month.age_days(dt.date(2025, 6, 11)) == 10  # a month-only date counts from the 1st
    undated = next(p for p in cat.prices if p.observed_on is None)
    assert undated.age_days() is None and undated.observed_text() == "not dated"


def test_measured_nccl_bandwidths_are_shipped_with_their_sources(cat: Catalog) -> None:
    """The bus bandwidths the scaling model uses, as data: each row's GPU has the link it was
    measured over, joining at least as many GPUs as the measurement had."""
    shipped = {(b.gpu_id, b.link): b.busbw_gb_per_s for b in cat.busbw}
    assert shipped == {
        ("a100-40gb-sxm", "nvlink"): 230.0,
        ("a100-80gb-sxm", "nvlink"): 230.0,
        ("h100-sxm", "nvlink"): 370.0,
        ("h200", "nvlink"): 475.0,
        ("h100-pcie", "nvlink"): 116.0,
    }
    for b in cat.busbw:
        gpu = cat.gpus[b.gpu_id]
        if b.link == "nvlink":
            assert gpu.nvlink_gb_per_s_total and (gpu.nvlink_max_gpus or 0) >= b.gpu_count, b
            assert b.busbw_gb_per_s <= gpu.nvlink_gb_per_s_total, b
        assert "nccl" in (b.source + (b.note or "")).lower() or "NCCL" in b.source, b
