"""Gradient checkpointing and meta-built modules in a captured PyTorch step (issue 44): what
``torch.utils.checkpoint`` recomputes in the backward pass is captured, named as a recomputed
forward and counted as such; a module built on the meta device (a model too big to build) is
captured exactly as the same module built on the CPU.

Real torch on the CPU, llama-tiny (``examples/models/torch_llama.py``): a second a capture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the capture needs pip install 'gpuscout[torch]'")

from gpuscout.measure.backends.torch.capture import user_step_hlo  # noqa: E402
from gpuscout.measure.backends.torch.to_hlo import RECOMPUTE  # noqa: E402
from gpuscout.predict.hlo import step_cost  # noqa: E402
from gpuscout.workloads import WORKLOADS  # noqa: E402
from gpuscout.workloads.llm import linear_shapes  # noqa: E402

LLAMA = Path(__file__).parents[2] / "examples" / "models" / "torch_llama.py"
BATCH = 2


def _captured(function: str) -> tuple[Any, Any]:
    ir = user_step_hlo(f"{LLAMA}:{function}", BATCH, "mixed_bfloat16")
    return ir, step_cost(ir.hlo, forward_scope=ir.model_name)


def test_checkpointed_blocks_are_recomputed_and_counted_as_recomputed() -> None:
    """Each block's forward runs again in the backward pass, up to the last result its
    backward reads (torch's early stop: the down projection's output is read by nothing, so
    it is not recomputed): the matmul FLOPs grow by exactly the other six projections and the
    fused attention's forward, per block. What the step keeps falls to each block's input (and
    the head's activations); what the recomputation hands the backward is counted apart."""
    plain_ir, plain = _captured("build_llama_tiny_s32_r0")
    ckpt_ir, ckpt = _captured("build_llama_tiny_s32_r0_ckpt")
    assert f'op_name="{RECOMPUTE}/' in ckpt_ir.hlo and RECOMPUTE not in plain_ir.hlo
    d = WORKLOADS["llama-tiny"].resolve({})
    tokens, head_dim = BATCH * d["seq_len"], d["hidden"] // d["heads"]
    six = sum(i * o for name, (i, o) in linear_shapes(d).items() if name != "down_proj")
    attention = 4 * BATCH * d["heads"] * d["seq_len"] ** 2 * head_dim  # one tile: no skip
    extra = d["layers"] * (2 * tokens * six + attention)
    assert ckpt.flops["matmul"] - plain.flops["matmul"] == extra
    assert plain.recomputed_activation_bytes == 0 < ckpt.recomputed_activation_bytes
    assert ckpt.saved_activation_bytes < plain.saved_activation_bytes / 2
    assert ckpt_ir.params == plain_ir.params


def test_a_module_built_on_the_meta_device_is_captured_as_on_the_cpu() -> None:
    """``build_llama_tiny_s32_r0`` builds llama-tiny on the meta device (no weight allocated);
    ``build`` builds it on the CPU: the same step, byte for byte of what is counted."""
    meta_ir, meta = _captured("build_llama_tiny_s32_r0")
    cpu_ir, cpu = _captured("build")
    assert meta.flops == cpu.flops and meta.bytes == cpu.bytes
    assert meta.saved_activation_bytes == cpu.saved_activation_bytes
    assert (meta_ir.params, meta_ir.param_bytes, meta_ir.optimizer_state_bytes) == (
        cpu_ir.params, cpu_ir.param_bytes, cpu_ir.optimizer_state_bytes
    )  # fmt: skip
