"""Keras code for the transformer workloads added after bert-base: bert-large and GPT-2.

bert-large is bert-base's model (``models.build_bert``) at BERT-large's sizes, under its own
name. The GPT-2 family is a decoder built from Keras layers only, so that it runs wherever the
other workloads run (Keras 3 on TensorFlow) and mixed precision comes from the global dtype
policy, as for bert-base: token and learned position embeddings, pre-LayerNorm blocks of causal
multi-head attention and a GELU feed-forward, a final LayerNorm, and an output projection that
reuses the token embedding matrix (tied, as GPT-2 does: no second vocab x hidden matrix).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import keras

from gpuscout.workloads import Dims

if TYPE_CHECKING:  # models.py imports this module for its BUILDERS: no import cycle at run time
    from gpuscout.measure.backends.keras.models import Built

# GPT-2's hyper-parameters that are not sizes (Hugging Face's GPT2Config defaults, as released):
# LayerNorm epsilon 1e-5, dropout 0.1 on embeddings, attention probabilities and residuals,
# weights drawn from N(0, 0.02).
LN_EPSILON = 1e-5
DROPOUT = 0.1
INIT_STDDEV = 0.02


def build_bert_large(d: Dims) -> Built:
    """bert-base's model at bert-large's sizes: the same code, so the two compare."""
    from gpuscout.measure.backends.keras.models import Built, build_bert

    built = build_bert(d)
    model = keras.Model(built.model.input, built.model.output, name="bert_large")
    return Built(model, built.loss, built.optimizer)


def gelu_tanh(x: Any) -> Any:
    """GPT-2's GELU, the tanh approximation (its ``gelu_new``), not Keras' default exact erf."""
    return keras.activations.gelu(x, approximate=True)


class GPT2Positions(keras.layers.Layer):  # type: ignore[misc]
    """Learned absolute positions, one row per position, added to the token embeddings.

    The table has as many rows as the sequence is long (at most GPT-2's 1,024, checked in the
    registry), so the weights of a shorter ``--seq-len`` are that many rows of GPT-2's table.
    """

    def __init__(self, length: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.length = length

    def build(self, input_shape: Any) -> None:
        self.positions = self.add_weight(
            shape=(self.length, input_shape[-1]),
            initializer=keras.initializers.RandomNormal(stddev=INIT_STDDEV),
            name="positions",
        )

    def call(self, x: Any) -> Any:
        return x + keras.ops.cast(self.positions, x.dtype)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "length": self.length}


class TiedLogits(keras.layers.Layer):  # type: ignore[misc]
    """Logits over the vocabulary from the token embedding's own matrix, transposed.

    The product runs in the policy's compute dtype (float16 under mixed precision, as GPT-2
    trainings run their language-model head) and the logits are then cast to float32, so the
    softmax and the loss are computed in full precision as Keras' mixed-precision guide asks.
    Owning no weight of its own is what makes the embeddings tied: the parameter count has one
    vocab x hidden matrix, and its gradient sums both uses.
    """

    def __init__(self, embedding: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.embedding = embedding

    def call(self, x: Any) -> Any:
        table = keras.ops.cast(self.embedding.embeddings, x.dtype)
        return keras.ops.cast(keras.ops.matmul(x, keras.ops.transpose(table)), "float32")


def token_embedding(d: Dims, dtype: str | None = None) -> Any:
    """The decoders' token embedding (GPT-2's and Llama's), drawn from N(0, 0.02) as both
    initialise it; ``dtype``: a frozen one's storage (LoRA keeps the base in 16 bits)."""
    return keras.layers.Embedding(
        d["vocab"],
        d["hidden"],
        embeddings_initializer=keras.initializers.RandomNormal(stddev=INIT_STDDEV),
        name="token_embedding",
        dtype=dtype,
    )


def _decoder_block(x: Any, d: Dims, i: int) -> Any:
    """Pre-LayerNorm: x + attn(LN(x)), then x + mlp(LN(x)), as in GPT-2 (Radford et al. 2019)."""
    h, init = d["hidden"], keras.initializers.RandomNormal(stddev=INIT_STDDEV)
    y = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"ln_1_{i}")(x)
    y = keras.layers.MultiHeadAttention(
        d["heads"], h // d["heads"], dropout=DROPOUT, kernel_initializer=init, name=f"attn_{i}"
    )(y, y, use_causal_mask=True)
    x = x + keras.layers.Dropout(DROPOUT)(y)
    y = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"ln_2_{i}")(x)
    y = keras.layers.Dense(d["ffn"], activation=gelu_tanh, kernel_initializer=init,
                           name=f"mlp_in_{i}")(y)  # fmt: skip
    y = keras.layers.Dense(h, kernel_initializer=init, name=f"mlp_out_{i}")(y)
    return x + keras.layers.Dropout(DROPOUT)(y)


def build_gpt2(d: Dims) -> Built:
    """A GPT-2-shaped causal language model at the sizes in ``d``; loss on every position."""
    from gpuscout.measure.backends.keras.models import Built

    ids = keras.Input((d["seq_len"],), dtype="int32", name="token_ids")
    embedding = token_embedding(d)
    x = embedding(ids)
    x = GPT2Positions(d["seq_len"], name="position_embedding")(x)
    x = keras.layers.Dropout(DROPOUT)(x)
    for i in range(d["layers"]):
        x = _decoder_block(x, d, i)
    x = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name="ln_f")(x)
    logits = TiedLogits(embedding, name="lm_head")(x)
    model = keras.Model(ids, logits, name="gpt2")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return Built(model, loss, keras.optimizers.AdamW(2.5e-4, weight_decay=0.01))
