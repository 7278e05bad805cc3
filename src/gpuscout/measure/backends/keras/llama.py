"""Keras code for the Llama-style decoders (``workloads/llm.py`` says which shapes and why).

Keras layers and ``keras.ops`` only, so the same model trains on TensorFlow and on JAX and
mixed precision comes from the global dtype policy: token embedding, then blocks of
x + o(attention(RMSNorm(x))) and x + down(silu(gate(RMSNorm(x))) * up(RMSNorm(x))) with
rotary positions on queries and keys and grouped-query causal attention
(``keras.ops.dot_product_attention``: key/value heads shared by heads / kv_heads query
heads), a final RMSNorm and the output projection (tied to the embedding, or its own matrix).
No biases, as in Llama. Weights are drawn from N(0, 0.02) (Llama's initializer_range).

LoRA (``lora_rank`` > 0): ``LoRADense`` on every linear layer of the blocks, everything else
frozen, so the optimizer holds state for the adapters only and the step computes no weight
gradient for the base. Not Keras' own ``Dense.enable_lora``: it merges the adapters into the
kernel on every call (x @ (W + A @ B)), so its step computes the full weight gradient and
then projects it, as much work as full fine-tuning (traced: 96 % of it at llama-tiny's size);
PEFT, torchtune and the QLoRA paper add the side path x @ A @ B, which is what published
LoRA throughput measures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import keras

from gpuscout.measure.backends.keras.transformers import TiedLogits, token_embedding
from gpuscout.workloads import Dims
from gpuscout.workloads.llm import LORA_ALPHA_PER_RANK, head_dim

if TYPE_CHECKING:  # models.py imports this module for its BUILDERS
    from gpuscout.measure.backends.keras.models import Built

RMS_EPSILON = 1e-5  # rms_norm_eps of every release in workloads/llm.py
INIT_STDDEV = 0.02
# AdamW's learning rate: full fine-tuning as Stanford Alpaca fine-tuned LLaMA-7B (2e-5); LoRA
# as the QLoRA paper for 7B and 13B models (2e-4). Neither changes the step's work.
FULL_LR, LORA_LR = 2e-5, 2e-4
# The name of what a checkpointed step keeps (see Kept)
KEPT = "gpuscout_kept"


class Rotary(keras.layers.Layer):  # type: ignore[misc]
    """Rotary position embedding (Su et al. 2021) on (batch, length, heads, head_dim), in the
    rotate-half layout of Hugging Face's Llama: the first half of each head's features pairs
    with the second half, rotated by position x base^(-2i / head_dim)."""

    def __init__(self, theta: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.theta = theta

    def call(self, x: Any) -> Any:
        ops = keras.ops
        length, dim = ops.shape(x)[1], ops.shape(x)[-1]
        half = dim // 2
        inverse = ops.power(self.theta, -ops.arange(0, half, dtype="float32") * 2.0 / dim)
        angles = ops.einsum("t,f->tf", ops.arange(length, dtype="float32"), inverse)
        cos = ops.cast(ops.cos(angles), x.dtype)[None, :, None, :]
        sin = ops.cast(ops.sin(angles), x.dtype)[None, :, None, :]
        first, second = x[..., :half], x[..., half:]
        return ops.concatenate([first * cos - second * sin, second * cos + first * sin], -1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "theta": self.theta}


class LoRADense(keras.layers.Layer):  # type: ignore[misc]
    """x @ W + (alpha / rank) x @ A @ B with W frozen (Hu et al. 2021): A drawn as PEFT draws
    it (Kaiming-uniform), B zeros, so training starts from the base model's output. W is held
    in the compute dtype (bfloat16 under mixed_bfloat16), as PEFT loads a base model: it is
    never updated, so float32 master weights would only double its memory."""

    def __init__(self, units: int, rank: int, alpha: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units, self.rank, self.alpha = units, rank, alpha

    def build(self, input_shape: Any) -> None:
        inputs = input_shape[-1]
        self.kernel = self.add_weight(
            shape=(inputs, self.units), name="kernel", trainable=False, dtype=self.compute_dtype,
            initializer=keras.initializers.RandomNormal(stddev=INIT_STDDEV),
        )  # fmt: skip
        self.lora_a = self.add_weight(
            shape=(inputs, self.rank), name="lora_a", initializer="he_uniform"
        )
        self.lora_b = self.add_weight(shape=(self.rank, self.units), name="lora_b",
                                      initializer="zeros")  # fmt: skip

    def call(self, x: Any) -> Any:
        ops, dtype = keras.ops, self.compute_dtype
        base = ops.matmul(x, ops.cast(self.kernel, dtype))
        side = ops.matmul(ops.matmul(x, ops.cast(self.lora_a, dtype)), ops.cast(self.lora_b, dtype))
        return base + side * (self.alpha / self.rank)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "units": self.units, "rank": self.rank,
                "alpha": self.alpha}  # fmt: skip


def _linear(units: int, name: str, d: Dims | None = None, dtype: str | None = None) -> Any:
    """A bias-free linear layer; with LoRA (``d["lora_rank"]``) one that takes adapters."""
    if d is not None and d["lora_rank"]:
        rank = d["lora_rank"]
        return LoRADense(units, rank, rank * LORA_ALPHA_PER_RANK, name=name)
    init = keras.initializers.RandomNormal(stddev=INIT_STDDEV)
    return keras.layers.Dense(units, use_bias=False, kernel_initializer=init, name=name,
                              dtype=dtype)  # fmt: skip


class CausalAttention(keras.layers.Layer):  # type: ignore[misc]
    """Grouped-query causal attention of rotated queries and keys: ``keras.ops``' own, or, in
    a step ``predict`` traces on JAX for a GPU that would fuse it, the fused kernel's custom
    calls (``jax/fused_attention.py``, through ``keras/attention.py``). Its own layer so the
    choice is made when traced."""

    def call(self, q: Any, k: Any, v: Any) -> Any:
        from gpuscout.measure.backends.keras.attention import attention_override

        if (kernel := attention_override()) is not None:
            return kernel(q, k, v, True)
        return keras.ops.dot_product_attention(q, k, v, is_causal=True)

    def compute_output_spec(self, q: Any, k: Any, v: Any) -> Any:
        return keras.KerasTensor(q.shape, dtype=q.dtype)


class Kept(keras.layers.Layer):  # type: ignore[misc]
    """A tensor gradient checkpointing keeps: each block's input, and the logits (the output
    projection is not checkpointed: its backward reads the logits' gradient, not its input's
    recomputation). On JAX, a checkpointed step (``jax/step.py``) keeps only the tensors so
    named between the passes and recomputes the rest of each block in the backward pass, as
    torchtune's and Hugging Face's per-layer activation checkpointing does. An identity
    everywhere else."""

    def call(self, x: Any) -> Any:
        if keras.backend.backend() == "jax":
            from jax.ad_checkpoint import checkpoint_name

            return checkpoint_name(x, KEPT)  # type: ignore[no-untyped-call]
        return x

    def compute_output_spec(self, x: Any) -> Any:
        return keras.KerasTensor(x.shape, dtype=x.dtype)


def _attention(x: Any, d: Dims, i: int) -> Any:
    length, heads, kv, dim = d["seq_len"], d["heads"], d["kv_heads"], head_dim(d)
    rotary = Rotary(float(d["rope_theta"]), name=f"rotary_{i}")
    q = keras.layers.Reshape((length, heads, dim))(_linear(heads * dim, f"q_proj_{i}", d)(x))
    k = keras.layers.Reshape((length, kv, dim))(_linear(kv * dim, f"k_proj_{i}", d)(x))
    v = keras.layers.Reshape((length, kv, dim))(_linear(kv * dim, f"v_proj_{i}", d)(x))
    y = CausalAttention(name=f"attention_{i}")(rotary(q), rotary(k), v)
    y = keras.layers.Reshape((length, heads * dim))(y)
    return _linear(d["hidden"], f"o_proj_{i}", d)(y)


def _block(x: Any, d: Dims, i: int) -> Any:
    x = Kept(name=f"block_input_{i}")(x)
    y = keras.layers.RMSNormalization(epsilon=RMS_EPSILON, name=f"attn_norm_{i}")(x)
    x = x + _attention(y, d, i)
    y = keras.layers.RMSNormalization(epsilon=RMS_EPSILON, name=f"mlp_norm_{i}")(x)
    gate = keras.activations.silu(_linear(d["ffn"], f"gate_proj_{i}", d)(y))
    return x + _linear(d["hidden"], f"down_proj_{i}", d)(
        gate * _linear(d["ffn"], f"up_proj_{i}", d)(y)
    )


def freeze_base(model: Any) -> None:
    """LoRA: every layer without adapters (embedding, norms, output projection) frozen."""
    for layer in model.layers:
        if layer.weights and not isinstance(layer, LoRADense):
            layer.trainable = False


def llama_model(d: Dims) -> Any:
    """The decoder at the sizes in ``d`` (LoRA if ``lora_rank``), without its optimizer: the
    abstract tracer (``jax/hlo.py``) builds it where no weight may be allocated. With LoRA the
    frozen embedding and output projection are held in the compute dtype too (see LoRADense)."""
    frozen = keras.mixed_precision.global_policy().compute_dtype if d["lora_rank"] else None
    ids = keras.Input((d["seq_len"],), dtype="int32", name="token_ids")
    embedding = token_embedding(d, frozen)
    x = embedding(ids)
    for i in range(d["layers"]):
        x = _block(x, d, i)
    x = keras.layers.RMSNormalization(epsilon=RMS_EPSILON, name="final_norm")(x)
    if d["tied"]:
        logits = TiedLogits(embedding, name="lm_head")(x)
    else:
        head = _linear(d["vocab"], "lm_head", dtype=frozen)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(head(x))
    model = keras.Model(ids, Kept(name="logits_kept", dtype="float32")(logits), name="llama")
    if d["lora_rank"]:
        freeze_base(model)
    return model


def llama_loss_and_optimizer(d: Dims) -> tuple[Any, Any]:
    """Next-token cross-entropy at every position, and AdamW (no weight decay)."""
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rate = LORA_LR if d["lora_rank"] else FULL_LR
    return loss, keras.optimizers.AdamW(rate, weight_decay=0.0)


def build_llama(d: Dims) -> Built:
    """The decoder, its loss and its optimizer (``models.BUILDERS``)."""
    from gpuscout.measure.backends.keras.models import Built

    return Built(llama_model(d), *llama_loss_and_optimizer(d), bool(d.get("checkpointing")))
