"""A step's kernels from its HLO (one per GEMM, convolution, reduction with its fused
producers, and loop fusion), and profiles rescaled exactly to another batch size."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gpuscout.predict.hlo import step_cost
from gpuscout.predict.kernels import Kernel, merge
from gpuscout.predict.profile import PROFILE_VERSION, Profile, cached
from gpuscout.predict.profile_trace import compute

# A dot, a convolution and its backward-filter twin, and an elementwise chain (add -> exp)
# whose only consumer is a reduce: XLA fuses the chain into the reduction (input fusion).
MODULE = (Path(__file__).parents[1] / "data" / "hand_kernels.hlo").read_text()


def test_kernels_of_a_hand_written_module() -> None:
    cost = step_cost(MODULE)
    conv_out = 2 * 10 * 10 * 5
    assert cost.kernels == [
        # batched GEMM: 4 x (8 x 16) @ (16 x 32), in f16: reads x and w, writes the result
        Kernel(op="matmul", flops=2 * 4 * 8 * 32 * 16,
               bytes=2 * (4 * 8 * 16 + 4 * 16 * 32 + 4 * 8 * 32), dtype="f16",
               batch=4, m=8, n=32, k=16, elements=4 * 8 * 32),
        # implicit GEMM: m = 2 images x 100 pixels, n = 5 filters, k = 3 x 3 taps x 3 channels
        Kernel(op="conv", flops=2 * 200 * 5 * 27, bytes=4 * (600 + 135 + conv_out),
               batch=1, m=200, n=5, k=27, elements=conv_out),
        # backward filter: m = 3 channels x 9 taps, n = 5 filters, k = 2 images x 100 pixels
        Kernel(op="conv", flops=2 * 27 * 5 * 200, bytes=4 * (600 + conv_out + 135),
               batch=1, m=27, n=5, k=200, elements=135),
        # add and exp fused into the reduce: it reads conv's output (and the two scalars) once
        # and writes 2 sums; its work is the add, the exp and the sum, one each per element
        Kernel(op="reduction", flops=3 * conv_out, bytes=4 * (conv_out + 1 + 1 + 2),
               elements=conv_out),
    ]  # fmt: skip
    # Kernels add up to the class totals: FLOPs exactly, GEMM bytes exactly, and the fused
    # reduction reads the chain's input where the class count reads the chain's output.
    assert sum(k.flops * k.count for k in cost.kernels) == sum(cost.flops.values())
    gemm_bytes = sum(k.bytes * k.count for k in cost.kernels if k.gemm)
    assert gemm_bytes == cost.bytes["matmul"]
    assert cost.bytes["elementwise"] == 0  # add and exp write nothing: both are fused


# x squared, plus x: two elementwise ops on one input, one result written
TWO_OPS = """HloModule m
ENTRY %main (x: f32[64]) -> (f32[64]) {
  %x = f32[64]{0} parameter(0)
  %sq = f32[64]{0} multiply(f32[64]{0} %x, f32[64]{0} %x)
  %y = f32[64]{0} add(f32[64]{0} %sq, f32[64]{0} %x)
  ROOT %out = (f32[64]{0}) tuple(f32[64]{0} %y)
}
"""


def test_a_loop_fusion_is_one_kernel_reading_its_inputs_once() -> None:
    """Two elementwise ops on one input, one result written: one kernel that reads x once."""
    text = TWO_OPS
    cost = step_cost(text)
    assert cost.kernels == [Kernel(op="elementwise", flops=128, bytes=4 * 64 * 2, elements=64)]
    assert cost.bytes["elementwise"] == 4 * 64  # the class count: writes only


def test_op_by_op_runs_every_elementwise_op_as_its_own_kernel() -> None:
    """Eager PyTorch on a model written as tensor ops: the multiply writes its square and the
    add reads it back (and x again), two kernels where XLA fuses one; FLOPs are the same."""
    text = TWO_OPS
    cost = step_cost(text)
    assert cost.op_by_op == [
        Kernel(op="elementwise", flops=64, bytes=4 * 64 * 2, elements=64),  # x in, sq out
        Kernel(op="elementwise", flops=64, bytes=4 * 64 * 3, elements=64),  # sq, x in; y out
    ]
    fused = sum(k.bytes * k.count for k in cost.kernels)
    # sq written and read back, x read a second time
    assert sum(k.bytes * k.count for k in cost.op_by_op) == fused + 3 * 4 * 64
    # the hand module: the same GEMMs; the reduce's fused add and exp become two kernels
    hand = step_cost(MODULE)
    assert [k for k in hand.op_by_op if k.gemm] == [k for k in hand.kernels if k.gemm]
    assert len(hand.op_by_op) == len(hand.kernels) + 2
    total = sum(k.flops * k.count for k in hand.op_by_op)
    assert total == sum(k.flops * k.count for k in hand.kernels)


def test_merge_keeps_identical_kernels_once() -> None:
    a = Kernel(op="elementwise", flops=1, bytes=8, elements=1)
    assert merge([a, a, a]) == [a.model_copy(update={"count": 3})]


@pytest.fixture(scope="module")
def scaled() -> Profile:
    """cnn-small (tiny) traced at batches 8 and 4: learns how each kernel grows."""
    return compute("cnn-small", {"image_size": 16, "filters": 8}, 8, "fp32", scale_from=4)


def _multiset(kernels: list[Kernel]) -> Counter[tuple[object, ...]]:
    counts: Counter[tuple[object, ...]] = Counter()
    for k in kernels:
        counts[k.key()] += k.count
    return counts


def test_rescaled_profile_equals_a_real_trace_at_another_batch(scaled: Profile) -> None:
    """Extrapolated to a batch never traced (as the published rows are, from 256 to 1,280):
    every total and every kernel, sizes and counts, as the real trace at that batch gives."""
    flops = sum(k.flops * k.count for k in scaled.kernels)
    assert flops == sum(scaled.flops.values())  # the kernels' FLOPs are the class FLOPs
    assert any(k.op == "conv" for k in scaled.kernels)
    real = compute("cnn-small", {"image_size": 16, "filters": 8}, 13, "fp32")
    rescaled = scaled.at_batch(13)
    assert rescaled.batch == 13
    assert rescaled.flops == real.flops
    assert rescaled.bytes == real.bytes
    assert rescaled.saved_activation_bytes == real.saved_activation_bytes
    assert _multiset(rescaled.kernels) == _multiset(real.kernels)
    assert _multiset(rescaled.op_by_op) == _multiset(real.op_by_op) != Counter()
    assert real.per_sample is None
    with pytest.raises(ValueError, match="traced at one batch only"):
        real.at_batch(14)


def test_cached_rescales_a_shipped_profile_to_any_batch() -> None:
    """Published ResNet-50 rows run at 96 to 1,280 images per GPU: the shipped profile at 256
    gives each of them without TensorFlow; the GEMMs grow with the batch, weights do not."""
    base = cached("resnet50", {}, 256, "mixed_float16")
    big = cached("resnet50", {}, 1280, "mixed_float16")
    assert base is not None and big is not None and big.batch == 1280
    assert big.flops["matmul"] == pytest.approx(5 * base.flops["matmul"], rel=1e-6)
    assert big.params == base.params
    first = next(i for i, k in enumerate(base.kernels) if k.op == "conv")
    assert big.kernels[first].m == 5 * base.kernels[first].m  # images x pixels
    assert big.kernels[first].n == base.kernels[first].n  # filters


def test_shipped_profiles_carry_their_kernels() -> None:
    """ResNet-50 v1.5 has 53 convolutions; training runs each forward, its weight gradient,
    and its input gradient (all but conv1's: nobody needs the gradient of the image)."""
    for precision in ("fp32", "mixed_float16", "mixed_bfloat16"):
        resnet = cached("resnet50", {}, 256, precision)
        assert resnet is not None and resnet.version == PROFILE_VERSION
        convs = sum(k.count for k in resnet.kernels if k.op == "conv")
        assert convs == 3 * 53 - 1
        flops = sum(k.flops * k.count for k in resnet.kernels)
        assert flops == pytest.approx(sum(resnet.flops.values()), rel=1e-9)
        gemm = sum(k.flops * k.count for k in resnet.kernels if k.gemm)
        assert gemm == pytest.approx(resnet.flops["matmul"], rel=1e-9)
        # Bytes: GEMMs exactly the class count; fused kernels add the reads the class count
        # leaves out (it counts writes), so the step's bytes rise, by 1.3x to 2.1x when shipped.
        gemm_bytes = sum(k.bytes * k.count for k in resnet.kernels if k.gemm)
        assert gemm_bytes == pytest.approx(resnet.bytes["matmul"], rel=1e-9)
        ratio = sum(k.bytes * k.count for k in resnet.kernels) / sum(resnet.bytes.values())
        assert 1.0 < ratio < 2.5
        # forward GEMMs have m = images x output pixels: a multiple of the batch
        assert all(k.m % 256 == 0 for k in resnet.kernels[:5] if k.op == "conv")
        bert = cached("bert-base", {}, 32, precision)
        assert bert is not None
        assert sum(k.count for k in bert.kernels if k.op == "matmul") >= 12 * 6 * 3
        assert bert.per_sample is not None and resnet.per_sample is not None


def test_the_decoder_profiles_carry_their_op_by_op_kernels() -> None:
    """Shipped for the decoder LLMs (Hugging Face's Llama runs eagerly in the fsdp_qlora rows):
    op by op, the same FLOPs and GEMMs, more bytes and launches; rescaled to another batch like
    the fused kernels. A profile without them says so rather than guess."""
    from gpuscout.workloads import get_workload

    dims = get_workload("llama-2-7b").resolve({"lora_rank": 64, "checkpointing": 1})
    llama = cached("llama-2-7b", dims, 4, "mixed_bfloat16", backend="jax")
    assert llama is not None and llama.op_by_op
    eager = llama.as_op_by_op()
    assert "counted op by op" in eager.method and eager.op_by_op == []

    def total(kernels: list[Kernel], size: str, gemm: bool | None = None) -> float:
        return sum(getattr(k, size) * k.count for k in kernels if gemm in (None, k.gemm))

    assert total(eager.kernels, "flops") == pytest.approx(total(llama.kernels, "flops"))
    assert total(eager.kernels, "bytes", True) == pytest.approx(
        total(llama.kernels, "bytes", True))  # fmt: skip
    assert total(eager.kernels, "bytes", False) > 1.5 * total(llama.kernels, "bytes", False)
    assert sum(k.count for k in eager.kernels) > 2 * sum(k.count for k in llama.kernels)
    resnet = cached("resnet50", {}, 256, "mixed_float16")
    assert resnet is not None
    with pytest.raises(ValueError, match="no op-by-op count"):
        resnet.as_op_by_op()


def test_a_cached_profile_of_the_old_version_is_traced_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version-1 file (no kernels) in the user's cache is not used: it would leave the
    per-kernel model with nothing to time. The current version is read back whole."""
    from gpuscout.predict import profile as profiles

    monkeypatch.setattr(profiles, "cache_dir", lambda: tmp_path)
    kernel = Kernel(op="matmul", flops=16, bytes=48, m=2, n=2, k=2, elements=4)
    new = Profile(
        workload="model:net.py:abc", dims={}, batch=8, precision="fp32",
        flops={"matmul": 16.0}, bytes={"matmul": 48.0}, params=4, param_bytes=16,
        optimizer_state_bytes=32, saved_activation_bytes=0.0, method="test", tf_version="x",
        kernels=[kernel],
    )  # fmt: skip
    old = new.model_dump(mode="json", exclude={"kernels", "per_sample"})
    old["version"] = 1
    path = tmp_path / f"{profiles._filename(new.key)}.json"
    path.write_text(json.dumps(old))
    assert cached("model:net.py:abc", {}, 8, "fp32") is None
    profiles.store(new)
    assert cached("model:net.py:abc", {}, 8, "fp32") == new
