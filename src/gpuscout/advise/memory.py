"""Does the training fit in GPU memory? Weights, gradients, optimizer state and activations.

For the built-in and user Keras models the predictor's profile has the numbers, counted from
the compiled step (``predict.memory_needed``). For transformer LLMs, which nobody traces on a
laptop, the standard estimates:

- full training, mixed precision with Adam: 16 bytes per parameter (16-bit weights and
  gradients, 32-bit master weights and two Adam moments);
- LoRA: frozen 16-bit weights (2 bytes per parameter) plus 16 bytes per adapter parameter;
- QLoRA: frozen 4-bit weights (0.5 bytes per parameter, plus ~6 % for quantization constants)
  plus 16 bytes per adapter parameter;
- activations per layer, 16-bit, no recomputation: s·b·h·(34 + 5·a·s/h) bytes (Korthikanti et
  al., "Reducing Activation Recomputation in Large Transformer Models", 2022), of which the
  5·a·s²·b are the attention scores and their softmax; a fused (flash) attention kernel keeps
  none of them (it recomputes them in the backward pass), and that is what the 16-bit steps
  gpuscout traces run on Ampere and newer, so it is the default here too (``fused_attention``),
  said with the figure; with activation checkpointing, 2·s·b·h bytes per layer are kept.

Where the shape is a built-in decoder workload's (``llama-2-7b``: 32 layers of 4096, 32 heads,
6.7 B parameters) and its compiled step for these settings is at hand (shipped or cached),
:func:`llm_memory` counts that step instead, as ``predict`` and ``advise`` do, so the same
model and settings get one figure in every command (issue 42).

Sharding the weights, gradients and optimizer state over N GPUs (ZeRO-3 / FSDP) divides the
model states by N; activations stay per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.core.errors import UserError
from gpuscout.predict.fit_options import SHARD_COUNTS
from gpuscout.predict.profile import QLORA_BYTES_PER_WEIGHT

Mode = Literal["full", "lora", "qlora"]
# Tokens one GPU holds activations for in a step: a token of a hidden size of 1 with
# checkpointing keeps 2 bytes a layer, so 1e12 tokens is 2 TB for one layer of the smallest
# model, over any GPU's memory by ten times; beyond it the estimate describes no training.
MAX_TOKENS_PER_STEP = 1e12


@dataclass(frozen=True)
class Transformer:
    params: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    batch: int
    mode: Mode = "full"
    lora_rank: int = 16
    checkpointing: bool = False
    fused_attention: bool = True  # flash attention: no s x s scores kept for the backward

    def check(self) -> None:
        """A shape no transformer can have is refused: its estimate would be a number about
        nothing (issue 31). Each attention head takes an equal slice of the hidden size, the
        adapters' rank is at most the hidden size, and each layer's query and output
        projections alone hold 2 x hidden^2 weights, so --params has a floor."""
        for name in ("params", "layers", "hidden", "heads", "seq_len", "batch", "lora_rank"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name.replace('_', '-')} must be positive.", None)
        if self.hidden % self.heads:
            raise UserError(
                f"--heads {self.heads} does not divide --hidden {self.hidden}: each attention "
                "head takes an equal slice of the hidden size.",
                f"give a head count that divides {self.hidden} (e.g. {self.hidden // 128 or 1} "
                "heads of 128), or correct --hidden.",
            )
        if self.mode != "full" and self.lora_rank > self.hidden:
            raise UserError(
                f"--lora-rank {self.lora_rank} is larger than --hidden {self.hidden}: a "
                "low-rank adapter's rank is at most the hidden size.",
                "use a rank such as 8, 16 or 64.",
            )
        floor = 2.0 * self.layers * self.hidden**2
        if self.params < floor:
            raise UserError(
                f"--params {self.params:g} is fewer than {self.layers} layers of hidden size "
                f"{self.hidden} hold (at least {floor:.3g}: each layer's query and output "
                "projections are 2 x hidden^2 weights).",
                "check --params, --layers and --hidden (7e9, 32 and 4096 for a 7B model).",
            )
        tokens = self.seq_len * self.batch
        if tokens > MAX_TOKENS_PER_STEP:
            raise UserError(
                f"--micro-batch {self.batch} x --seq-len {self.seq_len} is {tokens:.3g} tokens "
                f"a GPU a step, more than any GPU's memory holds activations for (at most "
                f"{MAX_TOKENS_PER_STEP:.0e}).",
                "lower --micro-batch or --seq-len.",
            )


@dataclass
class MemoryFit:
    need_gb: float
    breakdown_gb: dict[str, float]
    verdict: str  # "fits", "fits on N GPUs with sharding", "does not fit"
    gpus_needed: int | None
    notes: list[str] = field(default_factory=list)


def adapter_params(m: Transformer) -> float:
    """LoRA adapters on the four attention projections: 2 x rank x hidden each, per layer."""
    return m.layers * 4 * 2 * m.lora_rank * m.hidden


def transformer_bytes(m: Transformer) -> dict[str, float]:
    """Bytes per GPU without sharding, by component."""
    m.check()
    if m.mode == "full":
        states = {
            "weights (16-bit)": 2 * m.params,
            "gradients (16-bit)": 2 * m.params,
            "optimizer (fp32 master + Adam m, v)": 12 * m.params,
        }
    else:
        per_weight = 2.0 if m.mode == "lora" else QLORA_BYTES_PER_WEIGHT
        adapters = adapter_params(m)
        label = "frozen weights (16-bit)" if m.mode == "lora" else "frozen weights (4-bit)"
        states = {label: per_weight * m.params, "adapters + their Adam state": 16 * adapters}
    s, b, h, a = m.seq_len, m.batch, m.hidden, m.heads
    scores = 0.0 if m.fused_attention else 5 * a * s * s * b
    per_layer = 2 * s * b * h if m.checkpointing else 34 * s * b * h + scores
    return {**states, "activations": per_layer * m.layers}


def attention_scores_bytes(m: Transformer) -> float:
    """What unfused attention keeps beside a fused kernel: 5·a·s²·b bytes a layer."""
    return 0.0 if m.checkpointing else 5.0 * m.heads * m.seq_len**2 * m.batch * m.layers


def remedies(mode: Mode | None, checkpointing: bool) -> str:
    """What would make a step fit that the user has not already done."""
    ways = ["lower the batch or sequence length"]
    if not checkpointing:
        ways.append("use activation checkpointing")
    ways.append({"full": "LoRA/QLoRA", "lora": "QLoRA", "qlora": "", None: "LoRA/QLoRA"}[mode])
    return ", ".join(w for w in ways if w) + ", or more GPUs"


def memory_fit(
    breakdown: dict[str, float], memory_gb: float, shardable: bool = True,
    mode: Mode | None = None, checkpointing: bool = False,
) -> MemoryFit:  # fmt: skip
    """Fits on one GPU, on N with ZeRO-3/FSDP sharding of the model states, or not at all
    (then what would fit it, less what ``mode`` and ``checkpointing`` already do)."""
    usable = memory_gb * 1e9 * MEMORY_HEADROOM
    need = sum(breakdown.values())
    gb = {k: round(v / 1e9, 2) for k, v in breakdown.items()}
    if need <= usable:
        return MemoryFit(need / 1e9, gb, "fits", 1)
    if shardable:
        activations = breakdown.get("activations", 0.0)
        states = need - activations
        for n in SHARD_COUNTS:
            if states / n + activations <= usable:
                return MemoryFit(
                    need / 1e9,
                    gb,
                    f"fits on {n} GPUs with sharding (ZeRO-3/FSDP)",
                    n,
                    [f"per GPU: {(states / n + activations) / 1e9:.1f} GB of {usable / 1e9:.1f}"],
                )
    return MemoryFit(need / 1e9, gb, "does not fit", None, [remedies(mode, checkpointing)])
