"""The Llama-style decoders: fine-tuning at the shapes people fine-tune, and a tiny one.

What the articles' readers buy GPUs for today is fine-tuning a 7-8B model, fully or with LoRA.
One decoder (``measure/backends/keras/llama.py``) at the shapes of Meta's releases, as each
release's ``config.json`` on Hugging Face gives them:

- ``llama-2-7b`` (meta-llama/Llama-2-7b-hf): 32 layers, hidden 4096, 32 heads, no key/value
  grouping, FFN 11008, vocabulary 32000, context 4096, untied output projection; RoPE base 10^4.
  Most published fine-tuning throughput is for this model.
- ``llama-3.2-1b`` (meta-llama/Llama-3.2-1B): 16 layers, hidden 2048, 32 heads, 8 key/value
  heads, FFN 8192, vocabulary 128256, output projection tied to the embedding.
- ``llama-3.2-3b`` (meta-llama/Llama-3.2-3B): 28 layers, hidden 3072, 24 heads, 8 key/value
  heads, FFN 8192, vocabulary 128256, tied.
- ``llama-3.1-8b`` (meta-llama/Llama-3.1-8B): 32 layers, hidden 4096, 32 heads, 8 key/value
  heads, FFN 14336, vocabulary 128256, untied; context 131072, RoPE base 5 x 10^5.
- ``llama-tiny``: the same code at 2 layers and hidden 64, for tests and a CPU ``bench``.

The Llama 3 releases scale RoPE's frequencies for long contexts ("rope_type": "llama3"); that
changes which angles are used, not the work, and is not reproduced.

Fine-tuning mode is the ``lora_rank`` setting: 0 trains every weight (full fine-tuning); R > 0
freezes the base and trains rank-R adapters on every linear layer of the blocks (q, k, v, o,
gate, up, down) with alpha = R / 4, as the QLoRA paper fine-tunes (Dettmers et al. 2023,
arXiv:2305.14314, appendix: LoRA r = 64, alpha = 16, on all linear layers). Its LoRA dropout
is not applied: Keras' adapters have none, and dropout does not change the work.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuscout.core.errors import UserError
from gpuscout.workloads.base import Dims, Workload

# What --mode lora uses when no --lora-rank is given, and the share alpha / rank (QLoRA's
# r = 64, alpha = 16, see above).
LORA_RANK = 64
LORA_ALPHA_PER_RANK = 0.25
# The linear layers of each block that take adapters: all of them (QLoRA's choice).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# Stanford Alpaca's 52,002 instruction examples (tatsu-lab/stanford_alpaca, alpaca_data.json),
# one example per sequence: the data set LoRA fine-tuning guides start from. 3 epochs, as
# Alpaca fine-tuned LLaMA-7B (its README's train.py command, --num_train_epochs 3).
ALPACA_EXAMPLES = 52_002
ALPACA_EPOCHS = 3

# (layers, hidden, heads, kv_heads, ffn, vocab, tied, context, rope_theta, size)
_SHAPES: Mapping[str, tuple[int, int, int, int, int, int, int, int, int, str]] = {
    "llama-2-7b": (32, 4096, 32, 32, 11008, 32000, 0, 4096, 10_000, "6.7B"),
    "llama-3.2-1b": (16, 2048, 32, 8, 8192, 128256, 1, 131072, 500_000, "1.2B"),
    "llama-3.2-3b": (28, 3072, 24, 8, 8192, 128256, 1, 131072, 500_000, "3.2B"),
    "llama-3.1-8b": (32, 4096, 32, 8, 14336, 128256, 0, 131072, 500_000, "8.0B"),
    "llama-tiny": (2, 64, 4, 2, 128, 256, 0, 4096, 10_000, "0.1M"),
}
DEFAULT_SEQ_LEN = 2048
TINY_SEQ_LEN = 32
# Every decoder's test size (llama-tiny's own shape): trains in seconds on a CPU.
TINY_DIMS = {"seq_len": TINY_SEQ_LEN, "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2,
             "ffn": 128, "vocab": 256}  # fmt: skip


def head_dim(d: Dims) -> int:
    return d["hidden"] // d["heads"]


def linear_shapes(d: Dims) -> dict[str, tuple[int, int]]:
    """(inputs, outputs) of each linear layer of one block, by the name the builder gives it."""
    h, kv = d["hidden"], d["kv_heads"] * head_dim(d)
    return {
        "q_proj": (h, h),
        "k_proj": (h, kv),
        "v_proj": (h, kv),
        "o_proj": (h, h),
        "gate_proj": (h, d["ffn"]),
        "up_proj": (h, d["ffn"]),
        "down_proj": (d["ffn"], h),
    }


def base_params(d: Dims) -> int:
    """Every weight of the base model: blocks (linear layers and two RMSNorm scales each), the
    embedding, the final norm and, untied, the output projection."""
    block = sum(i * o for i, o in linear_shapes(d).values()) + 2 * d["hidden"]
    head = 0 if d["tied"] else d["hidden"] * d["vocab"]
    return d["layers"] * block + d["vocab"] * d["hidden"] + d["hidden"] + head


def adapter_params(d: Dims) -> int:
    """LoRA's trainable weights: A (inputs x r) and B (r x outputs) on each target."""
    r = d["lora_rank"]
    return d["layers"] * sum(r * (i + o) for i, o in linear_shapes(d).values())


def weight_state_bytes(d: Dims, precision: str = "fp32") -> int:
    """Bytes a training step holds for its weights, whatever the batch: each trained weight in
    float32 (Keras keeps variables in float32 under mixed precision too) with its float32
    gradient and AdamW's two float32 moments (4 + 4 + 8 bytes); LoRA's frozen base in the
    compute dtype (``keras/llama.py``: 2 bytes under mixed precision, 4 in fp32)."""
    trained = adapter_params(d) if d["lora_rank"] else base_params(d)
    frozen = base_params(d) if d["lora_rank"] else 0
    return (4 if precision == "fp32" else 2) * frozen + 16 * trained


def llama_forward_macs(d: Dims) -> tuple[int, int, int]:
    """Multiply-adds of one sequence's forward pass, as (linear layers and the output
    projection, attention scores and weighted sum, adapters).

    Attention over the full L x L square, as for GPT-2 (the causal mask is applied to the
    scores). The embedding is a gather.
    """
    length, r = d["seq_len"], d["lora_rank"]
    linear = sum(i * o for i, o in linear_shapes(d).values())
    adapters = sum(r * (i + o) for i, o in linear_shapes(d).values())
    base = d["layers"] * length * linear + length * d["hidden"] * d["vocab"]
    attention = d["layers"] * 2 * length * length * d["hidden"]
    return base, attention, d["layers"] * length * adapters


def llama_training_flops(d: Dims) -> float:
    """Full fine-tuning: 3 x forward (x 2 FLOPs per multiply-add), as every workload counts.
    LoRA: the frozen base computes its forward and the gradient of its inputs but no weight
    gradient, so 2 x forward for its linear layers; attention and the adapters are 3 x."""
    base, attention, adapters = llama_forward_macs(d)
    frozen = 2 if d["lora_rank"] else 3
    return 2.0 * (frozen * base + 3 * attention + 3 * adapters)


def _llama(name: str) -> Workload:
    layers, hidden, heads, kv, ffn, vocab, tied, context, theta, size = _SHAPES[name]
    tiny = name == "llama-tiny"
    source = "the same decoder at test size" if tiny else f"meta-llama's {name} config.json"
    dims = {
        "seq_len": TINY_SEQ_LEN if tiny else DEFAULT_SEQ_LEN,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv,
        "ffn": ffn,
        "vocab": vocab,
        "tied": tied,
        "rope_theta": theta,
        "lora_rank": 0,
        "checkpointing": 0,
    }
    return Workload(
        name=name,
        description=f"A Llama-style {size} decoder from Keras layers ({source}: {layers} "
        f"layers, hidden {hidden}, {heads} heads, {kv} key/value heads, SwiGLU FFN {ffn}, "
        f"vocab {vocab}, context up to {context:,}, output projection "
        f"{'tied to the embedding' if tied else 'untied'}): RMSNorm, rotary positions, causal "
        "grouped-query attention; next-token loss at every position; AdamW; random token ids, "
        "no downloads. --mode lora freezes the base and trains rank-R adapters on every linear "
        f"layer (QLoRA's recipe; R = --lora-rank, default {LORA_RANK}). Epoch = Stanford "
        f"Alpaca, {ALPACA_EXAMPLES:,} examples, one per sequence.",
        epoch_samples=ALPACA_EXAMPLES,
        epoch_unit="sequences",
        # one sequence a step per GPU: the micro-batch fine-tuning scripts fall back to on 24 GB
        # cards (a larger batch is reached by accumulating gradients, which does not change a
        # step's speed per sequence); set it with --batch-size
        default_batch_gpu=1,
        default_batch_cpu=2 if tiny else 1,
        dims=dims,
        tiny=TINY_DIMS,
        input_shape=lambda d: (d["seq_len"],),
        input_dtype="int32",
        label_shape=(),
        flops_per_sample=llama_training_flops,
        flops_note="analytic: full fine-tuning 6 x parameters per token (the embedding's look-up "
        "excepted) plus attention over the full L x L scores; LoRA 4 x the frozen base's "
        "(forward and input gradients, no weight gradients) plus 6 x the adapters'",
        settable=("seq_len", "lora_rank", "checkpointing"),
        default_epochs=ALPACA_EPOCHS,
        default_epochs_why="3 epochs over Alpaca, as Stanford Alpaca fine-tuned LLaMA-7B",
        task="causal-lm",
        max_dims={
            "seq_len": (context, f"{name}'s context length"),
            "lora_rank": (hidden, "an adapter's rank cannot exceed the hidden size"),
            "checkpointing": (1, "1 recomputes each block in the backward pass, 0 does not"),
        },
        may_be_zero=("tied", "lora_rank", "checkpointing"),
    )


LLAMA_WORKLOADS: tuple[Workload, ...] = tuple(_llama(name) for name in _SHAPES)
# Their names: the workloads that take --mode lora, and that predict traces from shapes alone
LLAMA_NAMES = frozenset(w.name for w in LLAMA_WORKLOADS)


def mode_dims(workload: str, model: str | None, mode: str, lora_rank: int | None) -> dict[str, int]:
    """The settings ``--mode`` and ``--lora-rank`` add to a workload's: ``lora_rank`` for
    ``--mode lora`` on a decoder LLM workload, nothing otherwise; a mode the workload cannot
    run, or a rank without ``--mode lora``, is a UserError naming both."""
    if mode != "lora":
        if lora_rank is not None:
            raise UserError(
                f"--lora-rank {lora_rank} applies to --mode lora only (--mode {mode} trains "
                "every weight)." if mode == "train" else
                f"--lora-rank {lora_rank} applies to --mode lora only, not --mode {mode}.",
                "add --mode lora, or drop --lora-rank.",
            )  # fmt: skip
        return {}
    names = ", ".join(w.name for w in LLAMA_WORKLOADS)
    if model is not None:
        raise UserError(
            "--mode lora adds adapters to the built-in decoder workloads, not to --model: "
            "your builder can call Dense.enable_lora itself.",
            f"drop --mode lora, or use --workload with one of: {names}.",
        )
    if not workload:
        raise UserError(
            "--mode lora adds adapters to a decoder LLM workload, and none was named.",
            f"name one with --workload (or --job): {names}.",
        )
    if workload not in LLAMA_NAMES:
        raise UserError(
            f"--mode lora: workload '{workload}' has no LoRA adapters.",
            f"use one of: {names}; or --mode train.",
        )
    return {"lora_rank": lora_rank or LORA_RANK}


def model_or(model_flag: str, workload: str | None) -> str:
    """How a refusal names the job's model: the workload, or where it came from."""
    return repr(workload) if workload else model_flag


def checkpointing_dims(
    workload: str | None, checkpointing: bool, source: str = "--model"
) -> dict[str, int]:
    """``--checkpointing``'s setting: ``checkpointing`` 1 for a decoder LLM workload; asked of
    any other workload (or of --model), a UserError naming it."""
    if not checkpointing:
        return {}
    if workload not in LLAMA_NAMES:
        names = ", ".join(sorted(LLAMA_NAMES))
        raise UserError(
            "--checkpointing recomputes the blocks of the decoder LLM workloads, not of "
            f"{model_or(source, workload)}.",
            f"drop --checkpointing, or use --workload with one of: {names}.",
        )
    return {"checkpointing": 1}


# Named fine-tuning jobs (``scout --job``, ``report --job``): the question the articles ask,
# "LoRA fine-tuning of a 7-8B model", as one word. (workload, settings, precision, in words.)
JOBS: dict[str, tuple[str, dict[str, int], str, str]] = {
    "llm-lora-8b": (
        "llama-3.1-8b", {"lora_rank": LORA_RANK, "checkpointing": 1}, "mixed_bfloat16",
        f"LoRA fine-tuning of Llama-3.1-8B: rank {LORA_RANK} on every linear layer (QLoRA's "
        "recipe), gradient checkpointing (torchtune's and Hugging Face's LoRA recipes turn it "
        "on), bfloat16, 2,048 tokens, 3 epochs of Alpaca",
    ),
    "llm-full-8b": (
        "llama-3.1-8b", {"checkpointing": 1}, "mixed_bfloat16",
        "full fine-tuning of Llama-3.1-8B with AdamW, gradient checkpointing, bfloat16, 2,048 "
        "tokens, 3 epochs of Alpaca",
    ),
}  # fmt: skip
