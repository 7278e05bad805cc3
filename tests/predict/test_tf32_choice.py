"""TF32 is never slower than the same GPU's CUDA cores (issue 30, item 5).

cuDNN's and XLA's autotuners pick, per convolution or matmul, the fastest algorithm allowed,
and allowing TF32 leaves the FP32 CUDA-core algorithms among the candidates: a GEMM that its
precision puts on tensor cores takes the faster of the two (``roofline.Terms.picked_compute``,
``kernel_model.cuda_core_alternative``), in predictions and in the fit's fast path alike.
An older fit predicted an RTX 4090 at 832 img/s in ResNet-50 with TF32 and 935 without.
No TensorFlow: the shipped profiles and published rows.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.predict.calibrate import Calibration, _Design, calibration_for, modelled
from gpuscout.predict.calibration_points import Point, point_terms, published_points
from gpuscout.predict.efficiency import Efficiency
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import step_time
from gpuscout.predict.session import session

# The shipped float32 profiles (workload, dims), each at several batch sizes.
FP32 = [
    ("resnet50", {}),
    ("bert-base", {}),
    ("bert-base", {"seq_len": 384}),
    ("bert-large", {"seq_len": 384}),
    ("gpt2", {}),
    ("cnn-small", {}),
    ("mlp", {}),
]
BATCHES = (1, 8, 64, 256)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _profile(workload: str, dims: dict[str, int], batch: int) -> Profile:
    found = cached(workload, dims, batch, "fp32")
    assert found is not None and found.kernels, (workload, dims, batch)
    return found


def _weak_tensor(cal: Calibration) -> Calibration:
    """The shipped fit with TF32 kernels at 20 % of their peak whatever their tensor rate per
    SM-clock: a fit no data gave, where the tensor path loses to CUDA cores on every GPU
    whose TF32 peak is at most twice its FP32 one (GeForce and professional Ampere and Ada
    cards) and wins on the A100 (8x)."""
    low = (0.2, cal.tensor[1], 0.2, cal.tensor[3])
    return dataclasses.replace(cal, tensor=low, scaling=(1.0, 1.0))


@pytest.mark.parametrize(("workload", "dims"), FP32)
def test_tf32_is_never_predicted_slower_than_cuda_cores(
    cat: Catalog, workload: str, dims: dict[str, int]
) -> None:
    """Every catalog GPU, through the entry every command predicts with, at several batches."""
    model = session(cat, runs=[])
    gpus = list(cat.gpus.values())
    for batch in BATCHES:
        profile = _profile(workload, dims, batch)
        on, _ = model.predict(profile, gpus, tf32=True)
        off, _ = model.predict(profile, gpus, tf32=False)
        for a, b in zip(on, off, strict=True):
            assert a.gpu == b.gpu and a.tf32 and not b.tf32
            assert a.samples_per_second >= b.samples_per_second * (1 - 1e-12), (a.gpu, batch)


def test_a_weak_tensor_path_falls_back_to_cuda_cores(cat: Catalog) -> None:
    """Where the fitted TF32 share makes the tensor path the slower one, the GEMMs run on CUDA
    cores: an RTX 4090 (TF32 peak = FP32 peak) then predicts TF32 exactly as --no-tf32, and
    says so; an A100 (TF32 at 8x FP32) stays faster with TF32. The breakdown counts those
    FLOPs and keeps every class at or above its roofline."""
    eff = _weak_tensor(calibration_for(cat)).efficiency
    profile = _profile("resnet50", {}, 256)
    same = []
    for gpu in cat.gpus.values():
        on, off = step_time(profile, gpu, eff, True), step_time(profile, gpu, eff, False)
        assert on.seconds <= off.seconds * (1 + 1e-12), gpu.id
        for c in on.classes.values():
            assert c["seconds"] >= c["roofline_s"] * (1 - 1e-9), gpu.id
            assert 0.0 <= c["cuda_core_flops"] <= c["flops"]
        same += [gpu.id] if on.seconds == pytest.approx(off.seconds, rel=1e-12) else []
    assert {"rtx-3090", "rtx-4090", "a40", "l40s"} <= set(same)
    assert not {"a100-40gb-sxm", "h100-sxm"} & set(same)
    rtx = step_time(profile, cat.gpus["rtx-4090"], eff)
    assert rtx.classes["conv"]["cuda_core_flops"] == pytest.approx(rtx.classes["conv"]["flops"])
    assert any("on CUDA cores: the autotuner picks the faster" in a for a in rtx.assumptions)
    a100 = step_time(profile, cat.gpus["a100-40gb-sxm"], eff, False).seconds
    assert step_time(profile, cat.gpus["a100-40gb-sxm"], eff).seconds < a100 / 1.5


def test_mixed_precision_gemms_get_the_same_choice(cat: Catalog) -> None:
    """An FP16 tensor path slower than the FP32 CUDA cores (a fit no data gave) falls back to
    them too, at the FP32 CUDA-core rate (the GEMM reads the same FP16 operands either way).
    With the shipped fit no FP16 GEMM does."""
    cal = calibration_for(cat)
    weak = dataclasses.replace(cal, tensor=(0.05, 0.05, 0.05, 0.05), scaling=(0.0, 0.0))
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    gpu = cat.gpus["b200"]  # ~7,700 FP16 FLOPs per SM-clock: with exponent 0, 0.7 % of peak
    parts = point_terms(Point(gpu, profile, 1.0, "x", "x"))
    on_cuda = parts.on_cuda_cores(weak.efficiency)
    assert on_cuda.any() and not parts.on_cuda_cores(cal.efficiency).any()
    _, compute, _ = parts.bodies(weak.efficiency)
    assert np.all(compute[on_cuda] == parts.cuda[on_cuda] * weak.efficiency.power_slowdown(
        parts.sm_ghz_per_w))  # fmt: skip


def test_the_fits_fast_path_models_the_choice(cat: Catalog) -> None:
    """``calibrate._Design.log_speed`` (what the fit tunes) and ``roofline.Terms`` (what
    predictions use) agree to 1e-9 where the choice binds, not only at the shipped fit."""
    points = published_points(cat)
    cal = _weak_tensor(calibration_for(cat))
    binds = [p for p in points if point_terms(p).on_cuda_cores(cal.for_point(p)).any()]
    assert len(binds) >= 10
    design = _Design.of(points)
    theta = np.array([*cal.tensor, *cal.scaling, cal.power_w,
                      *(math.log(cal.stacks[s]) for s in design.stacks)])  # fmt: skip
    fast = np.exp(design.log_speed(theta))
    assert fast == pytest.approx([modelled(cal, p) for p in points], rel=1e-9)
    # and the fit's smooth first step is exactly the model without the choice
    relaxed = np.exp(design.without_choice().log_speed(theta))
    assert np.all(relaxed <= fast * (1 + 1e-12))
    assert (relaxed < fast).sum() == len(binds)


def test_a_fit_without_the_a100_keeps_tf32_on_its_tensor_cores(cat: Catalog) -> None:
    """The choice makes the fit's loss flat wherever a tensor kind runs all on CUDA cores; a
    descent from the fit's fixed start stopped there with the A100 left out (conv TF32 at
    5.5 % of its peak, A100 ResNet-50 rows 31 % off). Started from the fit without the choice,
    an A100 it never saw keeps a TF32 step well ahead of its 19.5 TFLOP/s CUDA cores."""
    from gpuscout.predict.calibrate import fit_calibration
    from gpuscout.predict.out_of_sample import development

    rows = [p for p in development(published_points(cat)) if p.gpu.chip != "GA100"]
    eff: Efficiency = fit_calibration(rows).efficiency
    assert eff.tensor[2] > 0.15  # conv TF32: off its plateau
    profile = _profile("resnet50", {}, 256)
    a100 = cat.gpus["a100-40gb-sxm"]
    off = step_time(profile, a100, eff, False).seconds
    assert step_time(profile, a100, eff).seconds < off / 1.5
