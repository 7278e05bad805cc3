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
  al., "Reducing Activation Recomputation in Large Transformer Models", 2022); with activation
  checkpointing, 2·s·b·h bytes per layer are kept.

Sharding the weights, gradients and optimizer state over N GPUs (ZeRO-3 / FSDP) divides the
model states by N; activations stay per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.errors import UserError

Mode = Literal["full", "lora", "qlora"]
SHARD_COUNTS = (2, 4, 8, 16, 32, 64)


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

    def check(self) -> None:
        for name in ("params", "layers", "hidden", "heads", "seq_len", "batch", "lora_rank"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name.replace('_', '-')} must be positive.", None)


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
        per_weight = 2.0 if m.mode == "lora" else 0.5 * 1.06
        adapters = adapter_params(m)
        label = "frozen weights (16-bit)" if m.mode == "lora" else "frozen weights (4-bit)"
        states = {label: per_weight * m.params, "adapters + their Adam state": 16 * adapters}
    s, b, h, a = m.seq_len, m.batch, m.hidden, m.heads
    per_layer = 2 * s * b * h if m.checkpointing else s * b * h * (34 + 5 * a * s / h)
    return {**states, "activations": per_layer * m.layers}


def memory_fit(breakdown: dict[str, float], memory_gb: float, shardable: bool = True) -> MemoryFit:
    """Fits on one GPU, on N with ZeRO-3/FSDP sharding of the model states, or not at all."""
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
    return MemoryFit(need / 1e9, gb, "does not fit", None, ["lower the batch or sequence length, "
               "use activation checkpointing, LoRA/QLoRA, or more GPUs"])  # fmt: skip
