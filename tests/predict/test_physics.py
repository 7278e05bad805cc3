"""Physics the per-kernel model must obey for any fit (issue 18), on the shipped profiles and the
fit to the shipped published data: no TensorFlow."""

from __future__ import annotations

import dataclasses

import pytest

from gpuscout.catalog import Catalog, Gpu, load_catalog
from gpuscout.predict.calibrate import Calibration, calibration_for, fit_calibration
from gpuscout.predict.calibration_points import Point, point_terms, published_points
from gpuscout.predict.efficiency import Efficiency
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import step_time

RATES = ("fp32_tflops", "tf32_tensor_tflops", "fp16_tensor_fp32acc_tflops",
         "fp16_tensor_fp16acc_tflops", "bf16_tensor_tflops", "fp8_tensor_tflops")  # fmt: skip


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def eff(cat: Catalog) -> Efficiency:
    cal: Calibration = fit_calibration(published_points(cat))
    return cal.efficiency


def _profile(workload: str, precision: str, batch: int, **dims: int) -> Profile:
    found = cached(workload, dims, batch, precision)
    assert found is not None, f"no shipped profile of {workload} {dims} {precision}"
    assert found.kernels, "the shipped profile has no kernel list"
    return found


STEPS = [
    ("resnet50", "mixed_float16", 256, {}),
    ("resnet50", "fp32", 256, {}),
    ("resnet50-v1.5", "mixed_float16", 256, {}),
    ("bert-base", "mixed_float16", 32, {}),
    ("bert-base", "mixed_float16", 32, {"seq_len": 384}),
    ("bert-large", "mixed_float16", 32, {"seq_len": 384}),
]


def _speed(profile: Profile, gpu: Gpu, eff: Efficiency) -> float:
    return profile.batch / step_time(profile, gpu, eff).seconds


@pytest.mark.parametrize(("workload", "precision", "batch", "dims"), STEPS)
def test_h200_is_faster_than_h100_sxm_but_not_by_the_bandwidth_ratio(
    cat: Catalog, eff: Efficiency, workload: str, precision: str, batch: int,
    dims: dict[str, int],
) -> None:  # fmt: skip
    """Same SMs, clocks and tensor cores; 1.43x the bandwidth and 60 vs 50 MB of L2: faster,
    but a step's compute-bound kernels do not speed up, so never by the whole 1.43x."""
    profile = _profile(workload, precision, batch, **dims)
    h100, h200 = cat.gpus["h100-sxm"], cat.gpus["h200"]
    ratio = _speed(profile, h200, eff) / _speed(profile, h100, eff)
    bandwidth = h200.memory_bandwidth_gb_per_s / h100.memory_bandwidth_gb_per_s
    assert 1.0 < ratio < bandwidth - 0.01


def test_l4_is_not_slower_than_t4_for_resnet50_in_mixed_precision(
    cat: Catalog, eff: Efficiency
) -> None:
    """An L4 has 4x a T4's FP16 tensor peak and barely less bandwidth (300 vs 320 GB/s) but 12x
    the L2: a bandwidth-ratio model put the T4 first."""
    profile = _profile("resnet50", "mixed_float16", 256)
    assert _speed(profile, cat.gpus["l4"], eff) >= _speed(profile, cat.gpus["t4"], eff)


def test_an_l40s_is_not_an_rtx_3090(cat: Catalog, eff: Efficiency) -> None:
    """The L40S has 0.92x a 3090's bandwidth and 5x its FP16 tensor peak (FP32 accumulate): a
    bandwidth-ratio model called them equal."""
    profile = _profile("resnet50", "mixed_float16", 256)
    ratio = _speed(profile, cat.gpus["l40s"], eff) / _speed(profile, cat.gpus["rtx-3090"], eff)
    assert ratio > 1.1


@pytest.mark.parametrize(("workload", "precision", "batch", "dims"), STEPS)
def test_a_step_is_never_faster_than_launching_its_kernels(
    cat: Catalog, eff: Efficiency, workload: str, precision: str, batch: int,
    dims: dict[str, int],
) -> None:  # fmt: skip
    profile = _profile(workload, precision, batch, **dims)
    for gpu in cat.gpus.values():
        est = step_time(profile, gpu, eff)
        assert est.launches == sum(k.count for k in profile.kernels)
        assert est.seconds >= est.launches * eff.launch_s + eff.step_s
        assert sum(est.split.values()) == pytest.approx(est.seconds)


def test_a_tiny_step_is_launch_bound_on_a_big_gpu(cat: Catalog, eff: Efficiency) -> None:
    """The seed MLP was once predicted at 115 million samples/s on a B200 (a 2 µs step)."""
    profile = _profile("mlp", "fp32", 256)
    est = step_time(profile, cat.gpus["b200"], eff)
    assert est.seconds >= est.launches * eff.launch_s
    assert est.split["launch"] + est.split["step"] > est.split["compute"]
    assert profile.batch / est.seconds < 10e6


@pytest.mark.parametrize("gpu_id", ["t4", "a100-40gb-sxm", "h100-sxm", "rtx-4090"])
def test_more_sms_at_the_same_clocks_is_never_slower(
    cat: Catalog, eff: Efficiency, gpu_id: str
) -> None:
    """More SMs at the same clock: every peak grows with the SM count, and so does the board
    power that holds that clock; the memory does not grow."""
    gpu = cat.gpus[gpu_id]
    assert gpu.tdp_w
    for workload, precision, batch, dims in STEPS:
        profile = _profile(workload, precision, batch, **dims)
        base = step_time(profile, gpu, eff).seconds
        for factor in (1.1, 1.5, 2.0):
            sms = round(gpu.sm_count * factor)
            rates = {r: getattr(gpu, r) * sms / gpu.sm_count for r in RATES if getattr(gpu, r)}
            power = {"tdp_w": gpu.tdp_w * sms / gpu.sm_count}
            bigger = gpu.model_copy(update={"sm_count": sms} | rates | power)
            assert step_time(profile, bigger, eff).seconds <= base * (1 + 1e-9)


def test_predictions_do_not_order_gpus_by_bandwidth_alone(cat: Catalog, eff: Efficiency) -> None:
    """Somewhere in the catalog, a GPU with less bandwidth is predicted faster (the 4090 and
    the L40S against the 3090 Ti, an L4 against a T4), which a bandwidth ratio never does."""
    profile = _profile("resnet50", "mixed_float16", 256)
    speeds = {g.id: _speed(profile, g, eff) for g in cat.gpus.values()}
    inversions = [
        (a.id, b.id)
        for a in cat.gpus.values()
        for b in cat.gpus.values()
        if a.memory_bandwidth_gb_per_s < b.memory_bandwidth_gb_per_s and speeds[a.id] > speeds[b.id]
    ]
    assert ("l4", "t4") in inversions
    assert len(inversions) >= 10


def test_the_shipped_fit_is_the_fit_of_the_shipped_data(cat: Catalog) -> None:
    """``predict`` uses calibration.json when nothing of yours enters the fit; it must be what
    fitting the shipped rows gives (``benchmarks/prediction_accuracy.py --write`` renews it),
    to the digits printed: the fit is deterministic (fixed start, tight tolerances)."""
    shipped = calibration_for(cat)
    fitted = fit_calibration(published_points(cat))
    assert shipped.count == fitted.count
    assert shipped.tensor == pytest.approx(fitted.tensor, rel=1e-4)
    assert shipped.stacks == pytest.approx(fitted.stacks, rel=1e-4)
    assert shipped.scaling == pytest.approx(fitted.scaling, rel=1e-4, abs=1e-5)
    assert shipped.power_w == pytest.approx(fitted.power_w, rel=1e-4, abs=1e-5)


def test_a_no_tf32_step_is_modelled_on_cuda_cores(cat: Catalog, eff: Efficiency) -> None:
    """An fp32 step with --no-tf32 (a stored run anchoring, a prediction) is modelled as FP32
    on CUDA cores (19.5 TFLOP/s on an A100, not TF32's 156)."""
    profile = _profile("resnet50", "fp32", 256)
    a100 = cat.gpus["a100-80gb-sxm"]
    on = Point(a100, profile, 1000.0, "stored", "on", stack="pytorch NGC 22.10")
    off = dataclasses.replace(on, label="off", tf32=False)
    assert point_terms(off).seconds(eff) > 1.2 * point_terms(on).seconds(eff)
    assert point_terms(off).rate.startswith("FP32") and "TF32" in point_terms(on).rate


def test_no_kernel_runs_faster_than_the_peak_of_its_units(cat: Catalog, eff: Efficiency) -> None:
    """However the fitted shares scale with tensor FLOPs per SM-clock, a kernel reaches at most
    its units' peak: each kernel's compute time is at least its FLOPs at its units' peak, with
    the shipped fit, with every tensor share and exponent at its upper bound, and with TF32
    shares so low that TF32 GEMMs fall back to CUDA cores (issue 30: the faster of the two)."""
    import numpy as np

    at_peak = dataclasses.replace(eff, tensor=(1.0, 1.0, 1.0, 1.0), scaling=(1.0, 1.0))
    weak = dataclasses.replace(eff, tensor=(0.2, eff.tensor[1], 0.2, eff.tensor[3]),
                               scaling=(1.0, 1.0))  # fmt: skip
    fell_back = 0
    for gpu in cat.gpus.values():
        for workload, precision, batch, dims in STEPS:
            parts = point_terms(Point(gpu, _profile(workload, precision, batch, **dims), 1.0,
                                      "x", "x"))  # fmt: skip
            for fit in (eff, at_peak, weak):  # shipped, every share at its bound, TF32 weak
                _, compute, _ = parts.bodies(fit)
                assert np.all(compute >= parts.flops / parts.peak * (1 - 1e-12)), gpu.id
            fell_back += int(parts.on_cuda_cores(weak).sum())
    assert fell_back > 0


@pytest.mark.parametrize("gpu_id", ["t4", "l4", "a10", "rtx-6000-ada", "h100-sxm"])
def test_more_board_power_is_never_slower(cat: Catalog, eff: Efficiency, gpu_id: str) -> None:
    """Board power can only hold clocks up: more of it never slows a step, and a GPU with the
    power its SMs need at full clocks is not slowed at all (the fit finds the H100 SXM's 700 W
    enough for its 132 SMs, and the 72 W L4 short of it)."""
    gpu = cat.gpus[gpu_id]
    assert gpu.tdp_w
    profile = _profile("resnet50", "mixed_float16", 256)
    speeds = [_speed(profile, gpu.model_copy(update={"tdp_w": gpu.tdp_w * f}), eff)
              for f in (0.5, 1.0, 2.0, 10.0)]  # fmt: skip
    assert speeds == sorted(speeds)
    no_limit = dataclasses.replace(eff, power_w=0.0)
    assert speeds[-1] == pytest.approx(_speed(profile, gpu, no_limit), rel=1e-9)
    assumptions = step_time(profile, gpu, eff).assumptions
    throttled = any("board power" in a for a in assumptions)
    assert throttled == (gpu_id != "h100-sxm")


def _all_profiles() -> list[Profile]:
    import json
    from importlib import resources

    text = (resources.files("gpuscout.predict") / "data" / "profiles.json").read_text()
    return [Profile.model_validate(raw) for raw in json.loads(text)]


@pytest.mark.parametrize("kind", ["train", "forward"])
def test_no_step_beats_its_roofline_on_any_gpu(cat: Catalog, eff: Efficiency, kind: str) -> None:
    """Issue 29: for every catalog GPU and every shipped profile (and the same kernels as a
    forward pass), a step takes at least the sum over its kernels of max(FLOPs / peak of
    their units, bytes / DRAM bandwidth), and no kernel class moves its bytes faster than
    the catalog's bandwidth. (The old fit's global x0.44 stack factor had ResNet-50 moving
    bytes at 160 % of an RTX 3090's DRAM peak.)"""
    import numpy as np

    from gpuscout.predict.roofline import terms

    for profile in _all_profiles():
        if kind == "forward":
            profile = profile.model_copy(update={"kind": "forward"})
        overhead = eff.forward_s if kind == "forward" else eff.step_s
        for gpu in cat.gpus.values():
            est = step_time(profile, gpu, eff)
            parts = terms(profile, gpu)
            moved = parts.nbytes * eff.traffic
            floor = np.maximum(parts.flops / parts.peak, moved / parts.bandwidth)
            assert est.seconds >= float((parts.count * floor).sum()), (profile.key, gpu.id)
            for op, c in est.classes.items():
                assert c["seconds"] >= c["roofline_s"] * (1 - 1e-9), (profile.key, gpu.id, op)
                if c["bytes"]:
                    assert c["bytes"] / c["seconds"] <= gpu.memory_bandwidth_gb_per_s * 1e9
            classes = sum(c["seconds"] for c in est.classes.values())
            assert classes + overhead == pytest.approx(est.seconds)


def test_a_forward_pass_pays_a_call_not_a_training_step(cat: Catalog, eff: Efficiency) -> None:
    """Issue 29: an MLP forward pass at batch 1 was "predicted" at 1.02 ms on an H100 and
    1.04 ms on a T4, 98 % of it the training step's 1 ms floor."""
    profile = _profile("mlp", "fp32", 256).model_copy(update={"kind": "forward"})
    est = step_time(profile, cat.gpus["h100-sxm"], eff)
    assert est.split["step"] == eff.forward_s < eff.step_s / 10


def test_every_conv_layout_row_names_a_published_stack_and_a_layout(cat: Catalog) -> None:
    """``data/conv_layouts.csv`` is read by stack name: a row whose stack the CSV reader splits
    (an unquoted comma: "NGC PyTorch, Lambda v0 configs") or that names no published stack
    silently gives that stack no transposes. Every row must parse to a published stack, a
    precision and a layout."""
    from gpuscout.predict.calibrate import conv_layouts, relayout

    stacks = {p.stack for p in published_points(cat)}
    rows = conv_layouts()
    assert rows, "data/conv_layouts.csv has no rows"
    for (stack, precision), layout in rows.items():
        assert stack in stacks, f"conv_layouts.csv: {stack!r} is not a published stack"
        assert precision in ("mixed_float16", "mixed_bfloat16", "fp32"), (stack, precision)
        assert layout in ("NCHW", "NHWC"), (stack, layout)
        assert relayout(stack, precision) == float(layout == "NCHW")
