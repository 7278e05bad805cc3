"""The roofline, the fit, scaling and anchoring: properties that must hold for any numbers."""

from __future__ import annotations

import math

import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.core.errors import UserError
from gpuscout.predict import scaling, uncertainty
from gpuscout.predict.anchoring import Anchors, Measured
from gpuscout.predict.calibrate import calibration_for, fit_calibration
from gpuscout.predict.calibration_points import Point
from gpuscout.predict.efficiency import Efficiency
from gpuscout.predict.predictor import Prediction
from gpuscout.predict.predictor import predict as predict_rows
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import samples_per_second, step_time
from gpuscout.predict.stacks import stack_level

EFF = Efficiency(tensor=(0.5, 0.4, 0.3, 0.35), step_s=0.002, launch_s=5e-6)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def predict(
    profile: Profile, gpus: list[object], counts: list[int], cat: Catalog, reference: object,
    epoch: int, anchors: Anchors | None = None,
) -> tuple[list[Prediction], list[str]]:  # fmt: skip
    """The predictor as the session calls it: the shipped calibration, the default stack."""
    return predict_rows(profile, gpus, counts, cat, reference, epoch,  # type: ignore[arg-type]
                        calibration=calibration_for(cat), level=stack_level(None),
                        anchors=anchors)  # fmt: skip


def _measured(gpu: object, median: float, modelled: float, ids: tuple[int, ...]) -> Measured:
    return Measured(gpu, median, median * 0.98, median * 1.02, 64, median / modelled, ids)  # type: ignore[arg-type]


def _profile(matmul: float, memory: float, precision: str = "mixed_float16") -> Profile:
    """A synthetic step: ``matmul`` FLOPs on tensor cores and ``memory`` bytes of elementwise."""
    return Profile(
        workload="synthetic",
        dims={},
        batch=64,
        precision=precision,
        flops={"matmul": matmul, "elementwise": memory / 8, "reduction": 0.0},
        bytes={"matmul": matmul / 2000, "elementwise": memory, "reduction": 0.0},
        params=25_000_000,
        param_bytes=100_000_000,
        optimizer_state_bytes=100_000_000,
        saved_activation_bytes=5e9,
        method="synthetic",
        tf_version="-",
    )


def test_more_bandwidth_is_never_slower(cat: Catalog) -> None:
    gpu = cat.gpus["a100-40gb-sxm"]
    faster = gpu.model_copy(update={"memory_bandwidth_gb_per_s": 2 * gpu.memory_bandwidth_gb_per_s})
    memory_bound = _profile(matmul=1e9, memory=5e10)
    assert step_time(memory_bound, faster, EFF).seconds < step_time(memory_bound, gpu, EFF).seconds
    assert step_time(memory_bound, gpu, EFF).split["memory"] > 0
    compute_bound = _profile(matmul=1e14, memory=0)
    assert step_time(compute_bound, faster, EFF).seconds == pytest.approx(
        step_time(compute_bound, gpu, EFF).seconds, rel=1e-3
    )
    split = step_time(compute_bound, gpu, EFF).split
    assert split["compute"] > 0.9 * sum(split.values())


def test_precision_picks_the_peak(cat: Catalog) -> None:
    gpu = cat.gpus["a100-40gb-sxm"]
    fp16 = step_time(_profile(1e14, 0), gpu, EFF)
    fp32 = step_time(_profile(1e14, 0, "fp32"), gpu, EFF)
    assert "FP16 tensor" in fp16.matmul_rate and "TF32" in fp32.matmul_rate
    # the A100's TF32 rate is half its FP16 rate (156 vs 312 TFLOP/s); the fitted shares
    # differ (TF32 matmul 0.5, FP16 matmul 0.4) and the step cost is fixed. (On an RTX 4090,
    # TF32 = FP32 rate, a 0.5 share would lose to its CUDA cores: test_tf32_choice.py.)
    compute16, compute32 = fp16.seconds - EFF.step_s, fp32.seconds - EFF.step_s
    assert compute32 / compute16 == pytest.approx(2 * 0.4 / 0.5, rel=0.01)
    bf16_on_v100 = step_time(_profile(1e13, 1e6, "mixed_bfloat16"), cat.gpus["v100-sxm2-16gb"], EFF)
    assert "no BF16 tensor cores" in bf16_on_v100.matmul_rate


def test_more_gpus_never_lower_total_throughput(cat: Catalog) -> None:
    """From 2 GPUs up, on one interconnect, adding GPUs never lowers total throughput (the
    ring's cost per GPU is bounded by 2 x gradient / bandwidth). Going from 1 GPU to 2, or
    from a 2-GPU NVLink bridge to PCIe, *can* be slower when the all-reduce outweighs the
    step — that is real (communication-bound training), and ``predict`` flags such rows."""
    for gpu_id in ("rtx-4090", "a100-40gb-sxm", "h100-pcie"):
        gpu = cat.gpus[gpu_id]
        for grad_bytes in (1e6, 1e8, 4e9):
            step1 = 0.05
            last: dict[str, float] = {}
            for n in range(2, 17):
                link = scaling.link(gpu, n, catalog=cat)
                stepn = scaling.step_seconds(step1, grad_bytes, n, link.busbw_gb_per_s)
                throughput = n / stepn
                assert throughput >= last.get(link.name, 0.0)
                assert 0 < scaling.efficiency(step1, stepn) <= 1
                last[link.name] = throughput


def test_nvlink_beats_pcie_for_big_gradients(cat: Catalog) -> None:
    nvlink = scaling.link(cat.gpus["a100-40gb-sxm"], 8, catalog=cat)
    pcie = scaling.link(cat.gpus["a100-40gb-pcie"], 8, catalog=cat)  # bridge joins 2 GPUs, not 8
    assert nvlink.name == "NVLink" and pcie.name == "PCIe Gen4"
    t_nv = scaling.step_seconds(0.1, 1.4e9, 8, nvlink.busbw_gb_per_s)
    t_pcie = scaling.step_seconds(0.1, 1.4e9, 8, pcie.busbw_gb_per_s)
    assert scaling.efficiency(0.1, t_nv) > 0.9 > scaling.efficiency(0.1, t_pcie)


def test_fit_recovers_known_factors(cat: Catalog) -> None:
    """Points made by the model itself, on the shipped profiles at several batches: the fit
    gives back the tensor-core shares, how they scale with tensor FLOPs per SM-clock, the
    board power full clocks need and the stack's traffic factor (the launch and step costs
    are assumed, from data/overheads.csv, in the fit as in the truth)."""
    from gpuscout.predict.efficiency import overheads

    cost = overheads()
    truth = Efficiency(tensor=(0.45, 0.7, 0.3, 0.5), step_s=cost["train_step_s"].value,
                       launch_s=cost["launch_s"].value, traffic=1.2, scaling=(0.7, 0.4),
                       power_w=2.5)  # fmt: skip
    points = []
    gpus = ("rtx-3090", "rtx-4090", "a100-40gb-sxm", "h100-sxm", "v100-sxm2-16gb", "t4", "a10",
            "l4", "rtx-6000-ada", "b200")  # fmt: skip
    for gpu_id in gpus:
        gpu = cat.gpus[gpu_id]
        for workload, dims, batch in (("resnet50", {}, 64), ("resnet50", {}, 256),
                                      ("bert-base", {"seq_len": 384}, 8),
                                      ("bert-base", {"seq_len": 384}, 32)):  # fmt: skip
            for precision in ("fp32", "mixed_float16"):
                profile = cached(workload, dims, batch, precision)
                assert profile is not None
                measured = samples_per_second(profile, gpu, truth)
                label = f"{gpu_id} {workload} {batch} {precision}"
                points.append(Point(gpu, profile, measured, "synthetic", label, stack="s"))
    got = fit_calibration(points)
    for a, b in zip(got.tensor, truth.tensor, strict=True):
        assert a == pytest.approx(b, rel=0.05)
    for a, b in zip(got.scaling, truth.scaling, strict=True):
        assert a == pytest.approx(b, abs=0.03)
    assert got.power_w == pytest.approx(truth.power_w, rel=0.05)
    assert got.stacks["s"] == pytest.approx(truth.traffic, rel=0.05)
    assert max(abs(e) for e in got.log_errors) < 0.01


def test_anchored_prediction_reproduces_the_anchor(cat: Catalog) -> None:
    """The measured GPU shows its measurement and its interval; every other GPU the
    measurement times the model's ratio (one scale for all), with the chip-relative band."""
    profile = _profile(1e13, 1e10)
    a100 = cat.gpus["a100-40gb-sxm"]
    gpus = [a100, cat.gpus["h100-sxm"], cat.gpus["rtx-3090"]]
    plain, _ = predict(profile, gpus, [1], cat, cat.gpus["rtx-3090"], 1_000_000)
    base = {r.gpu: r.samples_per_second for r in plain}
    anchors = Anchors({a100.id: _measured(a100, 777.0, base[a100.id], (5,))})
    rows, notes = predict(profile, gpus, [1, 8], cat, cat.gpus["rtx-3090"], 1_000_000, anchors)
    exact = next(r for r in rows if r.gpu == a100.id and r.count == 1)
    assert exact.samples_per_second == 777.0 and (exact.low, exact.high) == (
        777.0 * 0.98,
        777.0 * 1.02,
    )
    assert exact.method.startswith("measured by your run 5")
    ratio = {r.gpu: r.samples_per_second for r in rows if r.count == 1}
    for gpu_id in ratio:  # anchoring scales every GPU by the same factor
        assert ratio[gpu_id] / base[gpu_id] == pytest.approx(777.0 / base[a100.id])
    h100 = next(r for r in rows if r.gpu == "h100-sxm" and r.count == 1)
    relative = uncertainty.band("synthetic", anchored=True)  # the chips' band, not a point
    assert (h100.low, h100.high) == pytest.approx(
        (h100.samples_per_second * relative.low, h100.samples_per_second * relative.high)
    )
    three = next(r for r in rows if r.gpu == "rtx-3090" and r.count == 1)
    assert three.relative_speed == pytest.approx(1.0)
    assert math.isclose(three.epoch_seconds, 1_000_000 / three.samples_per_second)
    assert any(n.startswith("anchored on your stored run 5: a100-40gb-sxm") for n in notes)


def test_runs_on_two_gpus_each_keep_theirs_and_the_rest_take_the_geometric_mean(
    cat: Catalog,
) -> None:
    profile = _profile(1e13, 1e10)
    a100, h100, l4 = cat.gpus["a100-40gb-sxm"], cat.gpus["h100-sxm"], cat.gpus["l4"]
    plain, _ = predict(profile, [a100, h100, l4], [1], cat, l4, 1000)
    base = {r.gpu: r.samples_per_second for r in plain}
    on = {a100.id: _measured(a100, 2 * base[a100.id], base[a100.id], (1,)),
          h100.id: _measured(h100, 8 * base[h100.id], base[h100.id], (2, 3))}  # fmt: skip
    rows, notes = predict(profile, [a100, h100, l4], [1], cat, l4, 1000, Anchors(on))
    got = {r.gpu: r.samples_per_second for r in rows}
    assert got[a100.id] == 2 * base[a100.id] and got[h100.id] == 8 * base[h100.id]
    assert got[l4.id] == pytest.approx(4 * base[l4.id])  # sqrt(2 x 8)
    assert any("every other GPU by their geometric mean (x4.00)" in n for n in notes)


def test_counts_below_one_are_refused(cat: Catalog) -> None:
    with pytest.raises(UserError, match="GPU counts must be >= 1"):
        predict(_profile(1e12, 1e9), [cat.gpus["t4"]], [0], cat, cat.gpus["t4"], 1000)


def test_measured_bus_bandwidths_come_from_the_catalog_with_their_source(cat: Catalog) -> None:
    h200 = scaling.link(cat.gpus["h200"], 8, catalog=cat)
    assert h200.busbw_gb_per_s == 475.0 and "nccl-tests issue #272" in h200.assumption
    assert "measured on 8 x h200" in h200.assumption
    assumed = scaling.link(cat.gpus["b200"], 8, catalog=cat)  # no measurement shipped
    assert "assumed 80% of NVLink" in assumed.assumption


def test_the_fits_fast_path_models_what_predictions_model(cat: Catalog) -> None:
    """The calibration evaluates its points with flat arrays (``calibrate._Design``) rather
    than ``roofline.Terms``: both must give the same step time for every published row, with
    its own stack's traffic factor, or the fit would tune a model predictions do not use."""
    import numpy as np

    from gpuscout.predict.calibrate import _Design, calibration_for, modelled
    from gpuscout.predict.calibration_points import published_points

    points = published_points(cat)
    cal = calibration_for(cat)
    design = _Design.of(points)
    theta = np.array([*cal.tensor, *cal.scaling, cal.power_w,
                      *(math.log(cal.stacks[s]) for s in design.stacks)])  # fmt: skip
    fast = np.exp(design.log_speed(theta))
    slow = np.array([modelled(cal, p) for p in points])
    assert fast == pytest.approx(slow, rel=1e-9)


def test_sharded_weights_add_two_all_gathers_and_halve_the_gradient_reduction():
    """FSDP / ZeRO-3 (scaling.step_seconds' sharded_bytes): each weight all-gathered twice a
    step and the gradients reduce-scattered; nothing sharded is the data-parallel step, and a
    4-bit QLoRA base gathers about a quarter of a 16-bit one's bytes."""
    from gpuscout.predict.fit_options import QLORA_BYTES_PER_WEIGHT
    from gpuscout.predict.predictor import sharded_weight_bytes

    c = scaling.Constants(overlap=0.0, straggler=0.0)
    bw, grad, weights = 10.0, 0.5e9, 13.5e9
    dp = scaling.step_seconds(1.0, grad, 2, bw, c)
    assert scaling.step_seconds(1.0, grad, 2, bw, c, sharded_bytes=0.0) == dp
    sharded = scaling.step_seconds(1.0, grad, 2, bw, c, sharded_bytes=weights)
    expected = (
        1.0
        + scaling.allgather_seconds(grad, 2, bw, c)
        + 2 * scaling.allgather_seconds(weights, 2, bw, c)
    )
    assert sharded == pytest.approx(expected)
    assert scaling.allgather_seconds(grad, 2, bw, c) < scaling.allreduce_seconds(grad, 2, bw, c)
    assert scaling.step_seconds(1.0, grad, 1, bw, c, sharded_bytes=weights) == 1.0
    # hidden behind the step as the all-reduce is: a long enough step hides it all but the tail
    hidden = scaling.Constants(overlap=1.0, straggler=0.0)
    assert scaling.step_seconds(100.0, grad, 2, bw, hidden, sharded_bytes=weights) < 100.01

    lora = Profile(workload="llama-2-7b", dims={"lora_rank": 64}, batch=1,
                   precision="mixed_bfloat16", flops={}, bytes={}, params=1000,
                   param_bytes=4000, optimizer_state_bytes=8000, saved_activation_bytes=0.0,
                   frozen_bytes=2_000_000, method="test", tf_version="test")  # fmt: skip
    assert sharded_weight_bytes(lora) == 2 * 1000 + 2_000_000
    assert sharded_weight_bytes(lora, four_bit_base=True) == pytest.approx(
        2 * 1000 + 1_000_000 * QLORA_BYTES_PER_WEIGHT
    )
