"""Counting FLOPs and bytes from HLO text: hand-written modules (no TensorFlow) and the real
train steps of the built-in workloads (TensorFlow on the CPU), against analytic counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.predict.hlo import step_cost
from gpuscout.predict.profile_trace import compute
from gpuscout.workloads import get_workload

HAND = (Path(__file__).parents[1] / "data" / "hand_module.hlo").read_text()


def test_hand_written_module() -> None:
    cost = step_cost(HAND, forward_scope="net")
    dot = 2 * 8 * 4 * 16
    conv = 2 * (2 * 10 * 10 * 5) * 9 * 3
    assert cost.flops["matmul"] == dot + conv
    assert cost.flops["reduction"] == 8 * 4
    assert cost.flops["elementwise"] == 2 * 8 * 4  # maximum, negate; the dead multiply is dropped
    assert cost.ops == {"matmul": 2, "elementwise": 2, "reduction": 1}
    # dot reads x and w and writes its result; conv likewise; reduce reads relu (+ the scalar).
    assert cost.bytes["matmul"] == 4 * (8 * 16 + 16 * 4 + 8 * 4) + 4 * (
        200 * 3 + 3 * 3 * 3 * 5 + 200 * 5
    )
    # relu has two consumers (reduce, negate): recomputing it in each reads dot.1 twice (256 B),
    # less than writing it and reading it twice (384 B), so XLA fuses it into both and only
    # negate, a step output, is written.
    assert cost.bytes["elementwise"] == 4 * 32
    assert cost.saved_activation_bytes == 4 * 32  # relu, read by the gradient op


@pytest.fixture(scope="module")
def mlp_profile():  # type: ignore[no-untyped-def]
    return compute("mlp", {}, 64, "fp32")


def test_mlp_profile_is_exact(mlp_profile) -> None:  # type: ignore[no-untyped-def]
    b, i, h, c = 64, 780, 128, 10
    forward = 2 * b * (i * h + h * c)
    # forward + weight gradients + activation gradients (none for the input layer)
    assert mlp_profile.flops["matmul"] == 3 * forward - 2 * b * i * h
    assert mlp_profile.params == i * h + h + h * c + c
    assert mlp_profile.param_bytes == 4 * mlp_profile.params
    assert mlp_profile.optimizer_state_bytes >= 2 * mlp_profile.param_bytes  # Adam: m and v
    # Its kernels: 2 forward GEMMs, 2 weight gradients, 1 input gradient; their FLOPs (with
    # the fused elementwise and reduction kernels') are exactly the class totals.
    gemms = sorted((k.m, k.n, k.k) for k in mlp_profile.kernels if k.op == "matmul")
    assert gemms == sorted([(b, h, i), (b, c, h), (h, c, b), (i, h, b), (b, h, c)])
    assert sum(k.flops * k.count for k in mlp_profile.kernels) == sum(mlp_profile.flops.values())


def test_tiny_workloads_match_the_analytic_counts() -> None:
    """Counted from the real HLO: matmul FLOPs = 3 x forward less the input layer's input
    gradient, which nobody computes (within 1 % for the attention workload)."""
    for name, first_layer_share in (("cnn-small", None), ("bert-base", None)):
        w = get_workload(name)
        dims = w.resolve(w.tiny)
        profile = compute(name, w.tiny, 4, "fp32")
        analytic = w.training_flops_per_sample(dims)
        assert analytic is not None
        counted = profile.flops["matmul"] / 4
        assert counted <= analytic * 1.001
        assert counted >= analytic * (first_layer_share or 0.85)


def test_shipped_full_size_profiles_match_the_analytic_counts() -> None:
    """ResNet-50 (Keras v1, 224 px): 3 x 3.86 GMAC x 2 per image, less conv1's input gradient
    (nobody needs the gradient of the image). BERT-base: 6 x non-embedding parameters per token
    plus attention, exactly."""
    from gpuscout.predict.profile import cached

    for precision in ("fp32", "mixed_float16"):
        resnet = cached("resnet50", {}, 256, precision)
        assert resnet is not None
        w50 = get_workload("resnet50")
        analytic = w50.training_flops_per_sample(w50.dims)
        assert analytic is not None
        conv1_input_grad = 2 * 112 * 112 * 64 * 7 * 7 * 3
        per_image = resnet.flops["matmul"] / 256
        assert per_image == pytest.approx(analytic - conv1_input_grad, rel=1e-6)
        assert resnet.params == pytest.approx(25.56e6, rel=0.01)
        bert = cached("bert-base", {}, 32, precision)
        assert bert is not None
        w = get_workload("bert-base")
        assert bert.flops["matmul"] / 32 == pytest.approx(
            w.training_flops_per_sample(w.dims), rel=1e-6
        )


# f16 -> f32 convert used three times; an add of two tensors used twice
_CAST = (Path(__file__).parents[1] / "data" / "cast_module.hlo").read_text()


def test_a_cheap_producer_is_recomputed_in_each_consumer_when_that_reads_less() -> None:
    """Mixed precision's f16 -> f32 convert before a norm's statistics: XLA recomputes it in
    each consumer, which reads the f16 tensor, instead of writing the f32 one and reading it
    back in each. Where recomputing reads more (an add of two tensors, used twice), the result
    is written once."""
    from gpuscout.predict.hlo_text import fusion_targets, live_instrs, parse_module

    entry, comps = parse_module(_CAST)
    targets = fusion_targets(live_instrs(comps[entry]))
    assert sorted(targets["cast"]) == ["both", "sq", "sum"]
    assert "both" not in targets  # 2 x 12 kB read again > 8 kB written + 2 x 8 kB read
    cost = step_cost(_CAST)
    n = 64 * 32
    by_bytes = sorted(k.bytes for k in cost.kernels)
    # sum reads y (f16); sq+norm reads y, writes f16; both reads y and z, writes f32;
    # u, v, w and sum2 fuse into one kernel that reads both and writes 32 floats (a reduce
    # also reads its 4-byte initial value)
    assert by_bytes == sorted([2 * n + 4 + 4 * 32, 2 * n + 2 * n, 2 * n + 4 * n + 4 * n,
                               4 * n + 4 + 4 * 32])  # fmt: skip
    assert sum(k.flops * k.count for k in cost.kernels) == sum(cost.flops.values())
