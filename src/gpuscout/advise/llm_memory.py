"""The memory a decoder LLM described by its shape needs, one figure per model and settings
(issue 42, "one truth per fact").

``gpuscout memory --params 7e9 --layers 32 --hidden 4096 --heads 32`` describes Llama-2-7B,
which ``memory --workload llama-2-7b``, ``predict`` and ``advise`` count from its compiled step.
Two answers for one model (44.9 GB against 25.8 GB once) leave a user with neither, so where
the shape is a built-in decoder workload's and its compiled step for the settings is at hand
(shipped, or traced and cached before), that step is counted; otherwise the shape's standard
estimate (``advise.memory``), with its attention assumption and what it leaves out said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuscout.advise.memory import Transformer, attention_scores_bytes, transformer_bytes
from gpuscout.predict.predictor import memory_parts
from gpuscout.predict.profile import Profile, cached
from gpuscout.workloads import get_workload
from gpuscout.workloads.llm import LLAMA_NAMES

__all__ = ["LlmMemory", "llm_memory"]

# a built-in workload has the user's shape when layers, hidden size and heads are its own and
# --params is within this share of its parameter count (7e9 for Llama-2-7B's 6.74e9)
PARAMS_WITHIN = 0.15
PRECISIONS = ("mixed_bfloat16", "mixed_float16")  # 16-bit, as the estimate assumes


@dataclass(frozen=True)
class LlmMemory:
    breakdown: dict[str, float]  # bytes by part
    what: str  # the model and settings, and how they were counted
    notes: list[str] = field(default_factory=list)


def llm_memory(m: Transformer) -> LlmMemory:
    """Bytes by part for ``m``: its built-in twin's compiled step where at hand, else the
    shape's estimate, each said."""
    m.check()
    settings = (
        f"{m.mode}{f' rank {m.lora_rank}' if m.mode != 'full' else ''}, sequence {m.seq_len}, "
        f"micro-batch {m.batch}" + (", activation checkpointing" if m.checkpointing else "")
    )
    twin = _twin(m)
    step = _compiled(twin, m) if twin else None
    if twin and step is not None:
        return LlmMemory(
            memory_parts(step),
            f"{m.params / 1e9:g}B-parameter transformer, {settings}: the shape of {twin}, "
            f"counted from its compiled step ({step.precision}), as predict and advise count it",
        )
    notes = []
    if m.fused_attention and (extra := attention_scores_bytes(m)):
        notes.append(
            "attention as a fused (flash) kernel, which keeps no attention scores for the "
            "backward pass (Ampere and newer in 16-bit, as gpuscout's traced steps run it); "
            f"unfused attention (older GPUs) keeps {extra / 1e9:,.1f} GB more"
        )
    if twin:
        notes.append(
            f"the shape of {twin}: its compiled step at these settings is not at hand (shipped: "
            f"sequence 2048, full or LoRA rank 64), so this is the shape's estimate; "
            f"gpuscout memory --workload {twin} counts the step (tracing needs gpuscout[jax])"
        )
    return LlmMemory(
        transformer_bytes(m),
        f"{m.params / 1e9:g}B-parameter transformer, {settings} (estimated from its shape)",
        notes,
    )


def _twin(m: Transformer) -> str | None:
    """The built-in decoder workload with ``m``'s shape, the nearest in parameters."""
    near: list[tuple[float, str]] = []
    for name in sorted(LLAMA_NAMES):
        dims = get_workload(name).resolve({})
        if (dims.get("layers"), dims.get("hidden"), dims.get("heads")) != (
            m.layers, m.hidden, m.heads,
        ):  # fmt: skip
            continue
        params = _params(name, dims)
        if params and abs(m.params / params - 1) <= PARAMS_WITHIN:
            near.append((abs(m.params / params - 1), name))
    return min(near)[1] if near else None


def _params(name: str, dims: dict[str, int]) -> float | None:
    """A workload's parameter count, from its shipped full-training step (None: not shipped)."""
    for precision in PRECISIONS:
        step = cached(name, dims | {"lora_rank": 0}, 1, precision, backend="jax")
        if step is not None:
            return float(step.params)
    return None


def _compiled(name: str, m: Transformer) -> Profile | None:
    """``name``'s compiled step at ``m``'s settings, if shipped or cached (never traced here:
    ``memory`` answers without a backend); QLoRA's 4-bit base is never a traced step."""
    if m.mode == "qlora":
        return None
    wanted = {"seq_len": m.seq_len, "lora_rank": m.lora_rank if m.mode == "lora" else 0,
              "checkpointing": int(m.checkpointing)}  # fmt: skip
    dims = get_workload(name).resolve(wanted)
    for precision in PRECISIONS:
        step = cached(name, dims, m.batch, precision, backend="jax")
        if step is not None:
            return step
    return None
