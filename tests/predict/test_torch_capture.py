"""A plain PyTorch module's training step captured from shapes (FakeTensorMode) and counted by
predict's HLO cost model (issue 44): its matmul and convolution FLOPs are PyTorch's own
``FlopCounterMode`` count of a real step, its kernels the ones eager PyTorch launches.

Real torch on the CPU, tiny models: each capture takes about a second."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the capture needs pip install 'gpuscout[torch]'")

from gpuscout.core.step_ir import FUSED_ATTENTION_BACKWARD, FUSED_ATTENTION_FORWARD  # noqa: E402
from gpuscout.measure.backends.torch import user_module  # noqa: E402
from gpuscout.measure.backends.torch.capture import user_step_hlo  # noqa: E402
from gpuscout.measure.user_spec import FunctionSpec  # noqa: E402
from gpuscout.predict.hlo import step_cost  # noqa: E402

CNN = Path(__file__).parents[2] / "examples" / "models" / "torch_cnn.py"
BATCH, HEADS, LENGTH, WIDTH = 4, 4, 256, 32  # 2 tiles of keys: causal skips 1 in 4

TRANSFORMER = f"""
import torch
from torch import nn

CAUSAL = {{causal}}


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, {WIDTH})
        self.norm = nn.LayerNorm({WIDTH})
        self.qkv = nn.Linear({WIDTH}, 3 * {WIDTH})
        self.out = nn.Linear({WIDTH}, {WIDTH})
        self.mlp = nn.Sequential(nn.Linear({WIDTH}, 4 * {WIDTH}), nn.GELU(),
                                 nn.Linear(4 * {WIDTH}, {WIDTH}))
        self.head = nn.Linear({WIDTH}, 100)

    def forward(self, tokens):
        x = self.embed(tokens)
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, n, 3, {HEADS}, d // {HEADS}).permute(2, 0, 3, 1, 4)
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL)
        x = x + self.out(a.transpose(1, 2).reshape(b, n, d))
        return self.head(x + self.mlp(x))

    def example_batch(self, batch_size):
        tokens = torch.randint(0, 100, (batch_size, {LENGTH}))
        return tokens, torch.randint(0, 100, (batch_size, {LENGTH}))

    def loss(self, outputs, targets):
        return nn.functional.cross_entropy(outputs.flatten(0, 1).float(), targets.flatten())


def build():
    return Block()
"""

MLP = """
import torch
from torch import nn


class MLP(nn.Sequential):
    def example_batch(self, batch_size):
        return torch.randn(batch_size, 48), torch.randn(batch_size, 8)


def build():
    return MLP(nn.Linear(48, 96), nn.ReLU(), nn.Linear(96, 96), nn.Tanh(), nn.Linear(96, 8))
"""


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return f"{path}:build"


def _flop_counter(spec: str, batch: int) -> float:
    """``FlopCounterMode``'s count of one real training step (float32, on the CPU)."""
    from torch.utils.flop_counter import FlopCounterMode

    path, _, function = spec.rpartition(":")
    parts = user_module.load(FunctionSpec(Path(path), function), batch)
    optimizer = parts.make_optimizer(parts.module.parameters())
    with FlopCounterMode(display=False) as counter:
        parts.loss(parts.forward(), parts.targets).backward()
        optimizer.step()
    return float(counter.get_total_flops())


def _attention_flops(causal: bool = False) -> float:
    """FlashAttention-2's count of the forward and backward kernels (``hlo_text``): PyTorch's
    counter does not count the CPU's fused attention kernel the capture sees."""
    assert not causal
    return 4.0 * BATCH * HEADS * LENGTH * LENGTH * (WIDTH // HEADS) * (1 + 2.5)


def _captured(spec: str, batch: int, precision: str = "mixed_float16") -> tuple[Any, Any]:
    ir = user_step_hlo(spec, batch, precision)
    return ir, step_cost(ir.hlo, forward_scope=ir.model_name)


def test_the_cnn_counts_flopcounter_flops_as_convolutions_eager() -> None:
    """torch_cnn: its three convolutions forward, their input and weight gradients (but the
    first layer's input gradient, which autograd skips) and the head's matmuls, each FLOP of
    FlopCounterMode's count; weights, Adam's state and the activations kept are sized; under
    mixed_float16 the convolutions run in float16; run op by op it has more kernels than
    fused."""
    spec = f"{CNN}:build"
    ir, cost = _captured(spec, 8)
    assert cost.flops["matmul"] == pytest.approx(_flop_counter(spec, 8), rel=0.01)
    convs = [k for k in cost.kernels if k.op == "conv"]
    assert len(convs) == 3 + 3 + 2  # forward, weight gradients, input gradients
    assert all(k.dtype == "f16" for k in convs)
    assert ir.params == 94_986 and ir.param_bytes == 4 * ir.params
    # Adam: two float32 moments a weight, and a step count a tensor
    assert ir.optimizer_state_bytes == pytest.approx(2 * ir.param_bytes, rel=0.01)
    assert cost.saved_activation_bytes > 0
    assert len(cost.op_by_op) > len(cost.kernels)
    assert ir.tf_version.startswith("torch 2.") and "FakeTensorMode" in ir.notes
    assert "GradScaler" in ir.notes and "Adam" not in ir.notes  # the module's own optimizer


def test_a_transformer_with_sdpa_counts_fused_attention_and_flopcounter_matmuls(
    tmp_path: Path,
) -> None:
    """Linear layers as FlopCounterMode counts them, plus the fused attention kernels
    (forward and backward custom calls, FlashAttention-2's count with the backward's
    recomputed scores); the embedding is a gather reading its rows, not the table; the
    default optimizer (AdamW) is said."""
    spec = _file(tmp_path, "block", TRANSFORMER.format(causal=False))
    ir, cost = _captured(spec, BATCH, "fp32")
    assert f'custom_call_target="{FUSED_ATTENTION_FORWARD}"' in ir.hlo
    assert f'custom_call_target="{FUSED_ATTENTION_BACKWARD}"' in ir.hlo
    expected = _flop_counter(spec, BATCH) + _attention_flops()
    assert cost.flops["matmul"] == pytest.approx(expected, rel=0.01)
    assert " gather(s64[" in ir.hlo and "float32 throughout" in ir.notes
    assert "torch.optim.AdamW" in ir.notes
    causal = _file(tmp_path, "causal", TRANSFORMER.format(causal=True))
    causal_ir, causal_cost = _captured(causal, BATCH, "mixed_bfloat16")
    assert f'"{FUSED_ATTENTION_FORWARD}_causal"' in causal_ir.hlo
    assert causal_cost.flops["matmul"] < cost.flops["matmul"]  # the masked tiles skipped
    assert "torch.autocast(bfloat16)" in causal_ir.notes and "GradScaler" not in causal_ir.notes


def test_an_mlp_counts_flopcounter_flops_and_its_forward_pass_alone(tmp_path: Path) -> None:
    """Three linear layers: the step's FLOPs are FlopCounterMode's; the forward pass captured
    for inference (eval, no gradients) is the three layers' forward GEMMs alone, no optimizer."""
    from gpuscout.measure.backends.torch.capture import forward_hlo

    spec = _file(tmp_path, "mlp", MLP)
    _, cost = _captured(spec, 16, "fp32")
    assert cost.flops["matmul"] == pytest.approx(_flop_counter(spec, 16), rel=0.01)
    forward = forward_hlo(None, spec, {}, 16, "fp32")
    counted = step_cost(forward.hlo, forward_scope=forward.model_name)
    assert counted.flops["matmul"] == 2 * 16 * (48 * 96 + 96 * 96 + 96 * 8)
    assert forward.optimizer_state_bytes == 0 and "autograd/" not in forward.hlo


CONVS = """
import torch
from torch import nn


class Convs(nn.Sequential):
    def example_batch(self, batch_size):
        return torch.randn(batch_size, 4, 16, 16), torch.randn(batch_size, 8, 16, 16)


def build():
    return Convs(nn.Conv2d(4, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 1, 1, groups=4),
                 nn.Conv2d(16, 16, 1), nn.ConvTranspose2d(16, 8, 4, 2, 1))
"""


def test_strided_grouped_and_transposed_convolutions_count_their_work(tmp_path: Path) -> None:
    """A strided convolution (its input gradient input-dilated), a grouped one, a 1x1 and a
    transposed one: FlopCounterMode's count, but for the grouped convolution's weight
    gradient, which FlopCounterMode counts as if ungrouped (x4 here): each of its 16x4x3x3
    weights sums 4 images x 8x8 pixels, 2 FLOPs a product, whatever the groups."""
    spec = _file(tmp_path, "convs", CONVS)
    _, cost = _captured(spec, 4, "fp32")
    grouped_weight_gradient = 2 * 16 * 4 * 3 * 3 * (4 * 8 * 8)
    expected = _flop_counter(spec, 4) - 3 * grouped_weight_gradient
    assert cost.flops["matmul"] == pytest.approx(expected, rel=0.01)
