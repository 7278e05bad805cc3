"""A Llama-style decoder in plain PyTorch, as the Keras decoder workloads build it
(``measure/backends/keras/llama.py``): what ``--model examples/models/torch_llama.py:build``
measures, traces and prices (no download, no ``transformers``; the protocol is in
docs/torch.md).

Shapes are the registry's (``gpuscout.workloads.llm``: Meta's releases' config.json), read from
it so the two cannot drift apart. Token embedding; blocks of x + o(attention(RMSNorm(x))) and
x + down(silu(gate(RMSNorm(x))) * up(RMSNorm(x))), with rotary positions (rotate-half layout,
as Hugging Face's Llama) on queries and keys and grouped-query causal attention by
``torch.nn.functional.scaled_dot_product_attention`` (``enable_gqa``: each key/value head serves
heads / kv_heads query heads); a final RMSNorm (eps 1e-5) and the output projection, tied to
the embedding or its own matrix. No biases; weights drawn from N(0, 0.02). AdamW without
weight decay (lr 2e-5 full, 2e-4 LoRA, as the Keras workloads).

LoRA (``lora_rank`` > 0): every linear layer of the blocks (q, k, v, o, gate, up, down) gets
the side path (alpha / r) x @ A @ B, A Kaiming-uniform and B zero as PEFT draws them, alpha =
r / 4 (QLoRA's r = 64, alpha = 16); everything else is frozen, so the optimizer holds the
adapters only and the base computes no weight gradient.

Gradient checkpointing (the workload's ``checkpointing`` 1): each block runs under
``torch.utils.checkpoint`` (non-reentrant), as torchtune's and Hugging Face's per-layer
activation checkpointing wrap each decoder layer: the block's input is kept, the block is
recomputed in the backward pass. ``fused_attention=False`` writes attention as Hugging Face's
eager path does (scores, an additive causal mask, a float32 softmax, the weighted sum), for a
run that does not call a fused kernel.

``build()`` is ``llama-tiny`` (2 layers, hidden 64: a CPU traces it in a second);
``build_llama2_7b()`` and ``build_llama2_7b_lora()`` the shapes most published fine-tuning
rows run, and ``llama(name, ...)`` any decoder workload at any sequence length and rank.
Building a 7B model allocates 27 GB of float32 weights: trace it under ``FakeTensorMode``, or
through a shape builder (``shape_builder``: ``build_llama_2_7b_s2048_r64_ckpt`` and the like,
made on request by the module's ``__getattr__``), which builds on the meta device, nothing
allocated, for gpuscout's capture to read the step's shapes from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from gpuscout.workloads import WORKLOADS
from gpuscout.workloads.llm import (
    LLAMA_NAMES,
    LORA_ALPHA_PER_RANK,
    LORA_RANK,
    LORA_TARGETS,
    linear_shapes,
)

RMS_EPS = 1e-5  # rms_norm_eps of every release in workloads/llm.py
INIT_STD = 0.02
FULL_LR, LORA_LR = 2e-5, 2e-4


class LoRALinear(nn.Module):
    """x @ W + (alpha / r) x @ A @ B with W frozen (Hu et al. 2021), as PEFT adds it: the side
    path, never W + A @ B merged (which would compute W's full gradient)."""

    def __init__(self, inputs: int, outputs: int, rank: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(outputs, inputs), requires_grad=False)
        self.lora_a = nn.Parameter(torch.empty(rank, inputs))
        self.lora_b = nn.Parameter(torch.zeros(outputs, rank))
        self.scale = LORA_ALPHA_PER_RANK  # alpha / rank
        nn.init.normal_(self.weight, std=INIT_STD)
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        side = nn.functional.linear(nn.functional.linear(x, self.lora_a), self.lora_b)
        return nn.functional.linear(x, self.weight) + side * self.scale


def _linear(inputs: int, outputs: int, rank: int) -> nn.Module:
    if rank:
        return LoRALinear(inputs, outputs, rank)
    layer = nn.Linear(inputs, outputs, bias=False)
    nn.init.normal_(layer.weight, std=INIT_STD)
    return layer


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions on (batch, heads, length, head_dim), rotate-half layout."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


class Block(nn.Module):
    """One decoder block: pre-RMSNorm attention and SwiGLU feed-forward, each residual."""

    def __init__(self, d: Mapping[str, int], fused_attention: bool = True) -> None:
        super().__init__()
        self.fused_attention = fused_attention
        self.heads, self.kv_heads = d["heads"], d["kv_heads"]
        self.head_dim = d["hidden"] // d["heads"]
        self.attn_norm = nn.RMSNorm(d["hidden"], eps=RMS_EPS)
        self.mlp_norm = nn.RMSNorm(d["hidden"], eps=RMS_EPS)
        shapes = linear_shapes(d)
        self.proj = nn.ModuleDict(
            {name: _linear(*shapes[name], d["lora_rank"]) for name in LORA_TARGETS}
        )

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        b, length, _ = x.shape
        return x.view(b, length, heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        p = self.proj
        y = self.attn_norm(x)
        q = rotate(self._heads(p["q_proj"](y), self.heads), cos, sin)
        k = rotate(self._heads(p["k_proj"](y), self.kv_heads), cos, sin)
        v = self._heads(p["v_proj"](y), self.kv_heads)
        a = self._attention(q, k, v)
        x = x + p["o_proj"](a.transpose(1, 2).reshape(x.shape))
        y = self.mlp_norm(x)
        return x + p["down_proj"](nn.functional.silu(p["gate_proj"](y)) * p["up_proj"](y))

    def _attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Causal attention: SDPA (a fused kernel on a GPU), or written out as Hugging Face's
        eager attention (``modeling_llama.eager_attention_forward``) with its mask."""
        if self.fused_attention:
            return nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads
            )
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        length = q.shape[2]
        mask = torch.full((length, length), float("-inf"), dtype=q.dtype, device=q.device)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim) + mask.triu(1)
        weights = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return weights @ v


class Llama(nn.Module):
    """The decoder at the sizes in ``d`` (a decoder workload's resolved dims)."""

    def __init__(self, d: Mapping[str, int], fused_attention: bool = True) -> None:
        super().__init__()
        self.dims = dict(d)
        self.checkpointing = bool(d.get("checkpointing"))
        h, vocab = d["hidden"], d["vocab"]
        self.embedding = nn.Embedding(vocab, h)
        nn.init.normal_(self.embedding.weight, std=INIT_STD)
        self.blocks = nn.ModuleList(Block(d, fused_attention) for _ in range(d["layers"]))
        self.final_norm = nn.RMSNorm(h, eps=RMS_EPS)
        self.lm_head: nn.Linear | None = None
        if not d["tied"]:
            self.lm_head = nn.Linear(h, vocab, bias=False)
            nn.init.normal_(self.lm_head.weight, std=INIT_STD)
        dim = h // d["heads"]
        inverse = d["rope_theta"] ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        angles = torch.outer(torch.arange(d["seq_len"], dtype=torch.float32), inverse)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        if d["lora_rank"]:  # the base frozen: only the adapters train
            for name, weight in self.named_parameters():
                weight.requires_grad_(name.endswith(("lora_a", "lora_b")))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids)
        cos, sin = self.get_buffer("cos")[: ids.shape[1]], self.get_buffer("sin")[: ids.shape[1]]
        recompute = self.checkpointing and self.training and torch.is_grad_enabled()
        for block in self.blocks:
            if recompute:  # no randomness in a block: no RNG state to stash and restore
                x = checkpoint(block, x, cos, sin, use_reentrant=False, preserve_rng_state=False)
            else:
                x = block(x, cos, sin)
        x = self.final_norm(x)
        if self.lm_head is None:
            return nn.functional.linear(x, self.embedding.weight)
        return self.lm_head(x)

    def example_batch(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Random token ids; the targets are the next token at every position."""
        ids = torch.randint(0, self.dims["vocab"], (batch_size, self.dims["seq_len"] + 1))
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs.float().flatten(0, 1), targets.flatten())

    def make_optimizer(self, parameters: object) -> torch.optim.Optimizer:
        trained = [p for p in parameters if p.requires_grad]  # type: ignore[attr-defined]
        rate = LORA_LR if self.dims["lora_rank"] else FULL_LR
        return torch.optim.AdamW(trained, lr=rate, weight_decay=0.0)


def llama_dims(name: str = "llama-tiny", **overrides: int) -> dict[str, int]:
    """A decoder workload's sizes with ``overrides`` (``seq_len``, ``lora_rank``)."""
    return WORKLOADS[name].resolve(overrides)


def llama(
    name: str = "llama-tiny",
    seq_len: int | None = None,
    lora_rank: int = 0,
    checkpointing: bool = False,
    fused_attention: bool = True,
) -> Llama:
    """The decoder workload ``name`` at ``seq_len`` tokens (default: the workload's), fully
    trained (``lora_rank`` 0) or with rank-``lora_rank`` adapters, each block checkpointed or
    not, its attention fused (SDPA) or written out."""
    overrides = {"lora_rank": lora_rank, "checkpointing": int(checkpointing),
                 **({"seq_len": seq_len} if seq_len else {})}  # fmt: skip
    return Llama(llama_dims(name, **overrides), fused_attention)


# A shape builder's name: build_<workload, "-" and "." as "_">_s<seq_len>_r<lora rank>, then
# _ckpt where each block is checkpointed and _unfused where attention is written out
SHAPE = re.compile(r"build_(?P<name>\w+?)_s(?P<seq>\d+)_r(?P<rank>\d+)(?P<ckpt>_ckpt)?"
                   r"(?P<unfused>_unfused)?")  # fmt: skip


def shape_builder(name: str) -> Callable[[], nn.Module] | None:
    """The builder a shape builder's name asks for (see ``SHAPE``), or None: the decoder at
    that workload, sequence, rank, checkpointing and attention, on the meta device (no weight
    allocated: what gpuscout's capture reads shapes from; running it needs ``llama``)."""
    found = SHAPE.fullmatch(name)
    workloads = {w.replace("-", "_").replace(".", "_"): w for w in LLAMA_NAMES}
    if found is None or found["name"] not in workloads:
        return None
    workload = workloads[found["name"]]

    def build() -> nn.Module:
        with torch.device("meta"):
            return llama(workload, int(found["seq"]), int(found["rank"]), bool(found["ckpt"]),
                         not found["unfused"])  # fmt: skip

    build.__name__ = build.__qualname__ = name
    return build


def __getattr__(name: str) -> Callable[[], nn.Module]:
    """``torch_llama.py:build_llama_3_1_8b_s8192_r0_ckpt`` and the like (``shape_builder``)."""
    found = shape_builder(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found


def build() -> nn.Module:
    """llama-tiny (2 layers, hidden 64, 4 heads, 2 key/value heads, 32 tokens)."""
    return llama()


def build_lora() -> nn.Module:
    """llama-tiny with rank-8 adapters (its hidden size is 64: rank 64 would be no saving)."""
    return llama(lora_rank=8)


def build_llama2_7b() -> nn.Module:
    """Llama-2-7B, every weight trained, 2,048 tokens."""
    return llama("llama-2-7b")


def build_llama2_7b_lora() -> nn.Module:
    """Llama-2-7B with rank-64 adapters on every linear layer (QLoRA's recipe), 2,048 tokens."""
    return llama("llama-2-7b", lora_rank=LORA_RANK)
