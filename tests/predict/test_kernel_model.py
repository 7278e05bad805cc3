"""The kernel-level model: its physics hold for any parameters in range, the fit finds known
parameters again, and the shipped fit reproduces kernels of a GPU it did not see within the
error it states. No TensorFlow."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gpuscout.catalog import load_catalog
from gpuscout.predict import kernel_model
from gpuscout.predict.kernel_data import (
    DATA_OPS,
    OP_OF,
    KernelArrays,
    KernelRow,
    arrays_of,
    kernel_of,
    load_devices,
    load_rows,
    mape,
)
from gpuscout.predict.kernel_fit import fit_op
from gpuscout.predict.kernel_model import (
    L2_GAIN_MAX,
    GpuFeatures,
    KernelModel,
    OpParams,
)
from gpuscout.predict.kernels import OPS, Kernel, Op


def random_kernels(rng: np.random.Generator, n: int) -> list[Kernel]:
    out = []
    for _ in range(n):
        op = OPS[int(rng.integers(len(OPS)))]
        if op in ("matmul", "conv"):
            b, m, nn, k = (int(x) for x in np.exp(rng.uniform(0, [3, 9, 9, 9])).round())
            out.append(
                Kernel(
                    op=op,
                    flops=2.0 * b * m * nn * k,
                    bytes=4.0 * b * (m * k + k * nn + m * nn),
                    batch=b,
                    m=m,
                    n=nn,
                    k=k,
                )
            )
        else:
            el = int(np.exp(rng.uniform(0, 18)))
            out.append(
                Kernel(
                    op=op, flops=float(rng.uniform(0, 10) * el), bytes=float(8 * el), elements=el
                )
            )
    return out


@pytest.fixture(scope="module")
def catalog_gpus() -> list[GpuFeatures]:
    return [GpuFeatures.from_gpu(g) for g in load_catalog().gpus.values() if g.sm_count]


def test_shipped_parameters_are_physical() -> None:
    model = kernel_model.load()
    assert set(model.params) == set(OPS)
    for p in model.params.values():
        assert 0 < p.u_compute <= 1 and 0 < p.u_mem <= 1 and 1 <= p.l2_gain <= L2_GAIN_MAX
    assert set(model.meta["leave_one_gpu_out"]) >= set(DATA_OPS)


def test_a_full_gpu_feeds_its_dram(catalog_gpus: list[GpuFeatures]) -> None:
    """The per-SM feed limit is for kernels on few SMs: with all SMs busy it never caps DRAM."""
    for p in kernel_model.load().params.values():
        for gpu in catalog_gpus:
            assert gpu.sm_count * p.bytes_per_clock * gpu.clock_mhz * 1e6 >= gpu.bandwidth


def test_never_faster_than_roofline_and_launch(catalog_gpus: list[GpuFeatures]) -> None:
    model = kernel_model.load()
    rng = np.random.default_rng(1)
    for kernel in random_kernels(rng, 300):
        gpu = catalog_gpus[int(rng.integers(len(catalog_gpus)))]
        t = model.time(kernel, gpu, gpu.fp32_flops)
        p = model.params[kernel.op]
        # Compute never beats the peak; memory beats DRAM only for a working set inside L2.
        dram = gpu.bandwidth * (L2_GAIN_MAX if kernel.bytes < gpu.l2_bytes else 1.0)
        floor = p.launch_s + max(kernel.flops / gpu.fp32_flops, kernel.bytes / dram)
        assert t.seconds >= floor * (1 - 1e-12)
        assert t.seconds >= t.launch_s + max(t.compute_s, t.memory_s) * (1 - 1e-12)
        # Efficiency <= 1 against the peaks.
        assert kernel.flops / (t.seconds * gpu.fp32_flops) <= 1
        if kernel.bytes >= gpu.l2_bytes:
            assert kernel.bytes / (t.seconds * gpu.bandwidth) <= 1


def test_more_sms_or_bandwidth_is_never_slower(catalog_gpus: list[GpuFeatures]) -> None:
    model = kernel_model.load()
    rng = np.random.default_rng(2)
    for kernel in random_kernels(rng, 300):
        gpu = catalog_gpus[int(rng.integers(len(catalog_gpus)))]
        base = model.time(kernel, gpu, gpu.fp32_flops).seconds
        for factor in (1.1, 1.5, 2.0, 3.7):
            # More SMs at the same clocks: the peak grows with them.
            wider = dataclasses.replace(
                gpu,
                sm_count=math.ceil(gpu.sm_count * factor),
                fp32_flops=gpu.fp32_flops * math.ceil(gpu.sm_count * factor) / gpu.sm_count,
            )
            assert model.time(kernel, wider, wider.fp32_flops).seconds <= base * (1 + 1e-12)
            faster = dataclasses.replace(gpu, bandwidth=gpu.bandwidth * factor)
            assert model.time(kernel, faster, gpu.fp32_flops).seconds <= base * (1 + 1e-12)
            bigger_l2 = dataclasses.replace(gpu, l2_bytes=gpu.l2_bytes * factor)
            assert model.time(kernel, bigger_l2, gpu.fp32_flops).seconds <= base * (1 + 1e-12)


def test_small_gemm_underfills_a_big_gpu() -> None:
    """A 40-tile GEMM takes as long on 132 SMs as on 40: the waves, not the peak, decide."""
    model = kernel_model.load()
    small = Kernel(
        op="matmul",
        flops=2.0 * 256 * 640 * 4096,
        bytes=4.0 * (256 * 4096 + 4096 * 640 + 256 * 640),
        m=256,
        n=640,
        k=4096,
    )
    per_sm = 100e9
    t40 = model.time(small, GpuFeatures(40, 1500, 40 * per_sm, 3e12, 50e6), 40 * per_sm)
    t132 = model.time(small, GpuFeatures(132, 1500, 132 * per_sm, 3e12, 50e6), 132 * per_sm)
    assert t132.compute_s < t40.compute_s  # split-K helps a little ...
    assert t40.compute_s / t132.compute_s < 132 / 40  # ... but far less than the peak ratio


SYNTHETIC = {
    "matmul": OpParams(
        u_compute=0.7,
        u_mem=0.6,
        l2_gain=2.0,
        bytes_per_clock=48.0,
        launch_s=2e-5,
        overlap=3.0,
        tile_m=128,
        tile_n=64,
        tiles_per_sm=2,
    ),
    "elementwise": OpParams(
        u_compute=0.5, u_mem=0.8, l2_gain=1.8, bytes_per_clock=40.0, launch_s=8e-6, overlap=6.0
    ),
}


@pytest.mark.parametrize("op", list(SYNTHETIC))
def test_fit_recovers_known_parameters(op: str) -> None:
    true = SYNTHETIC[op]
    devices = list(load_devices().values())
    rng = np.random.default_rng(3)
    kernels = [k for k in random_kernels(rng, 6000) if k.op == op][:1200]
    rows = []
    for i, kernel in enumerate(kernels):
        gpu = devices[i % len(devices)]
        seconds = KernelModel({op: true}).time(kernel, gpu, gpu.fp32_flops).seconds  # type: ignore[dict-item]
        rows.append((kernel, gpu, seconds))
    data = arrays_of([_row(k, g, s) for k, g, s in rows])
    tile = ((true.tile_m, true.tile_n, true.tiles_per_sm), (64, 64, 1))
    fitted, loss = fit_op(op, data, tiles=tile)  # type: ignore[arg-type]
    assert loss < 1e-4
    assert (fitted.tile_m, fitted.tile_n, fitted.tiles_per_sm) == tile[0] or op != "matmul"
    for name in ("u_mem", "launch_s", "l2_gain", "bytes_per_clock"):
        assert getattr(fitted, name) == pytest.approx(getattr(true, name), rel=0.05), name
    if op == "matmul":  # elementwise kernels at a few FLOPs a byte never show their compute
        assert fitted.u_compute == pytest.approx(true.u_compute, rel=0.05)


def _row(kernel: Kernel, gpu: GpuFeatures, seconds: float) -> KernelRow:
    return KernelRow(kernel, gpu, seconds, "synthetic", "bmm")


def test_held_out_gpu_within_stated_error() -> None:
    """Leave the T4 out of a sample of the real kernels, fit, predict its kernels.

    The margin: the shipped MAPE is over all of the T4's rows with a fit on up to 1,500 rows
    per (operator, GPU); here a systematic 1-in-25 sample (12 to 700 rows per operator) is
    fitted on fewer rows with the shipped tile shapes. Sampling error of a MAPE over n rows with
    absolute errors spread about as widely as their mean is about MAPE / sqrt(n): a third of it
    for the 12 layer-norm rows, 4 % of it for bmm. 1.25x + 5 points covers that; on the other
    four GPUs the same check lands within it too."""
    model = kernel_model.load()
    data: KernelArrays = arrays_of(load_rows(every=25))
    # Convolutions as the shipped fit treats them: those cuDNN ran as a GEMM (the others do
    # fewer FLOPs than the model counts; the JSON states their error apart).
    data = data.take((data.data_op != "conv") | (data.algo == "gemm"))
    held = np.array(["T4" in d for d in data.device])
    train, test = data.take(~held), data.take(held)
    params: dict[Op, OpParams] = {}
    for op in OPS:
        shipped = model.params[op]
        tiles = ((shipped.tile_m, shipped.tile_n, shipped.tiles_per_sm),)
        params[op] = fit_op(op, train, tiles=tiles)[0]
    predicted = KernelModel(params).predict(test)
    for kind in DATA_OPS:
        rows = test.data_op == kind
        stated = model.meta["leave_one_gpu_out"][kind]["mape_pct_per_gpu"]["Tesla T4"]
        got = mape(predicted[rows], test.seconds[rows])
        assert got <= 1.25 * stated + 5, (kind, OP_OF[kind], got, stated)


def test_linear_columns_are_rows_in_out() -> None:
    """NeuSight's linear rows: M rows, N input features, K output features (the launch grids
    say so); the GEMM contracts over N."""
    k = kernel_of("linear", {"B": 1, "M": 58, "N": 13, "K": 141})
    assert (k.m, k.n, k.k) == (58, 141, 13)
    assert k.flops == 2 * 58 * 13 * 141
    assert k.bytes == 4 * (58 * 13 + 13 * 141 + 58 * 141)
    conv = kernel_of(
        "conv", {"B": 2, "Cin": 3, "Cout": 8, "ks": 3, "size": 5, "stride": 1, "pad": 1}
    )
    assert (conv.m, conv.n, conv.k) == (2 * 25, 8, 27)


@pytest.mark.parametrize(
    "field,value",
    [
        ("sm_count", -4),
        ("clock_mhz", math.nan),
        ("fp32_flops", -1.0),
        ("bandwidth", math.inf),
        ("l2_bytes", -1.0),
        ("bandwidth", 0.0),
    ],
)
def test_bad_feature_is_refused(field: str, value: float) -> None:
    good = {
        "sm_count": 40,
        "clock_mhz": 1590.0,
        "fp32_flops": 8.1e12,
        "bandwidth": 3.2e11,
        "l2_bytes": 4e6,
    }
    with pytest.raises(ValueError, match=field):
        GpuFeatures(**{**good, field: value})  # type: ignore[arg-type]


def test_bad_peak_is_refused() -> None:
    gpu = GpuFeatures(40, 1590.0, 8.1e12, 3.2e11, 4e6)
    kernel = Kernel(op="elementwise", flops=1e6, bytes=8e6, elements=1_000_000)
    for peak in (math.nan, 0.0, -1.0):
        with pytest.raises(ValueError, match="peak_flops"):
            kernel_model.load().time(kernel, gpu, peak)


def test_unknown_l2_is_assumed_and_said() -> None:
    gpu = next(iter(load_catalog().gpus.values()))
    row = gpu.model_copy(update={"l2_cache_mb": None}) if hasattr(gpu, "l2_cache_mb") else gpu
    features = GpuFeatures.from_gpu(row)
    assert features.l2_bytes == pytest.approx(0.05e6 * features.sm_count)
    assert any("L2" in a for a in features.assumptions)


def test_cuda_core_gemm_factors_are_those_the_kernel_data_gives() -> None:
    """Issue 29: CUDA-core GEMM speed per architecture comes from the measured kernels of a
    full-power board of it (``scripts/fit_kernel_model.py --architectures`` recomputes the
    shipped table), not from one chip's end-to-end rows; the V100 measures faster than the
    pooled model; a newer data-centre chip takes the A100's, said, and a dual-issue FP32 chip
    none. Memory-bound kernels
    stream at their memory technology's measured share, the same way."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).parents[2] / "scripts" / "fit_kernel_model.py"
    spec = importlib.util.spec_from_file_location("fit_kernel_model", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = kernel_model.load()
    rows = arrays_of(load_rows())
    got = module.architecture_factors(model, rows)["factors"]
    shipped = model.meta["cuda_gemm_by_architecture"]["factors"]
    assert got == shipped
    memory = model.meta["memory_by_type"]["factors"]
    assert module.memory_factors(model, rows)["factors"] == memory
    # HBM boards stream faster than the pooled model, GDDR boards slower (both measured)
    for op in ("elementwise", "reduction"):
        assert memory["HBM"][op] > 1.05 > 1.0 > memory["GDDR"][op]
        assert model.memory_factor("HBM3e", op) == memory["HBM"][op]
        assert model.memory_factor("GDDR6X", op) == memory["GDDR"][op]
    assert model.memory_factor("LPDDR5X", "elementwise") == 1.0
    assert set(shipped) == {"Ampere", "Pascal", "Volta"}  # Turing's only board is a 70 W T4
    assert shipped["Volta"]["matmul"] > 1.2 and shipped["Volta"]["conv"] > 1.2
    assert model.cuda_gemm_factor("GV100", "conv") == (shipped["Volta"]["conv"], None)
    assert model.cuda_gemm_factor("GA100", "matmul") == (shipped["Ampere"]["matmul"], None)
    factor, note = model.cuda_gemm_factor("GH100", "matmul")
    assert factor == shipped["Ampere"]["matmul"] and note and "A100" in note
    # dual-issue FP32 chips and the power-limited T4's take the pooled model
    for chip in ("GA102", "AD102", "GB202", "TU104"):
        assert model.cuda_gemm_factor(chip, "conv") == (1.0, None)


def test_cuda_core_gemms_never_pass_their_peak_on_any_architecture() -> None:
    """The factor raises a CUDA-core GEMM's utilisation at most to 1 (the FP32 peak)."""
    from gpuscout.predict.calibration_points import Point, point_terms
    from gpuscout.predict.efficiency import Efficiency
    from gpuscout.predict.profile import cached

    eff = Efficiency(tensor=(1.0, 1.0, 1.0, 1.0), step_s=0.0, launch_s=0.0)
    profile = cached("resnet50", {}, 256, "fp32")
    assert profile is not None
    for gpu in load_catalog().gpus.values():
        parts = point_terms(Point(gpu, profile, 1.0, "x", "x", tf32=False))
        _, compute, _ = parts.bodies(eff)
        gemm = parts.tensor == 0
        assert np.all(compute[gemm] >= parts.flops[gemm] / parts.peak[gemm] * (1 - 1e-12))
