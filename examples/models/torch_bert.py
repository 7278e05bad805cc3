"""BERT-base in plain PyTorch, as the ``bert-base`` workload builds it in Keras: what
``--model examples/models/torch_bert.py:build`` measures, traces and prices (no download, no
``transformers``; the protocol is in docs/torch.md).

The sizes are the registry's (``gpuscout.workloads``: 12 layers, hidden 768, 12 heads, FFN 3072,
vocabulary 30522, 2 classes), read from it so the two cannot drift apart. The layers are the
Keras model's (``measure/backends/keras/models.build_bert``), one for one, so the parameter
counts are equal: token embeddings plus a learned position table as long as the sequence, layer
norm (eps 1e-12) and dropout 0.1 on their sum; post-LN encoder layers, x = LN(x + attention(x)),
x = LN(x + FFN(x)), with biased Q, K, V and output projections, attention computed by
``torch.nn.functional.scaled_dot_product_attention`` (no dropout on its probabilities, as Keras'
``MultiHeadAttention`` at its default), an exact (erf) GELU FFN; a tanh pooler on the first
token and a 2-class classifier. AdamW (lr 1e-4), cross-entropy.

Compared with Google's BERT (and NVIDIA's, which the published PyTorch rows run) it has no
token-type embeddings (2 x 768 weights) and a position table of ``seq_len`` rows rather than
512; SQuAD's head is per-token start/end logits where this one classifies the sequence. Each is
a gather or under 0.1 % of the multiply-adds.

``build()`` is the workload's default, 128 tokens; ``build_squad()`` the 384-token sequences the
published SQuAD fine-tuning rows run (``predict/calibration_points.py`` models them at 384), and
``build_large_squad()`` BERT-large's sizes there; ``build_tiny()`` the workload's test size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import nn

from gpuscout.workloads import WORKLOADS

LN_EPS = 1e-12
DROPOUT = 0.1
SQUAD_SEQ_LEN = 384  # the published PyTorch BERT rows: SQuAD v1.1 fine-tuning at 384 tokens


class EncoderLayer(nn.Module):
    """Post-LN: attention, residual, LN; FFN, residual, LN (Keras' ``_encoder_layer``)."""

    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
        self.ln_attn = nn.LayerNorm(hidden, eps=LN_EPS)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ln_ffn = nn.LayerNorm(hidden, eps=LN_EPS)
        self.dropout = nn.Dropout(DROPOUT)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, length, h = x.shape
        return x.view(b, length, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        attn = nn.functional.scaled_dot_product_attention(q, k, v)
        attn = self.o(attn.transpose(1, 2).reshape(x.shape))
        x = self.ln_attn(x + self.dropout(attn))
        ff = self.ffn_out(nn.functional.gelu(self.ffn_in(x)))
        return self.ln_ffn(x + self.dropout(ff))


class Bert(nn.Module):
    """The encoder and its sequence-classification head at the sizes in ``dims``."""

    def __init__(self, dims: Mapping[str, int]) -> None:
        super().__init__()
        self.dims = dict(dims)
        h, length = dims["hidden"], dims["seq_len"]
        self.token_embedding = nn.Embedding(dims["vocab"], h)
        # Keras' PositionEmbedding draws it glorot-uniform; the draw does not change the work
        bound = math.sqrt(6 / (length + h))
        self.positions = nn.Parameter(torch.empty(length, h).uniform_(-bound, bound))
        self.ln_embed = nn.LayerNorm(h, eps=LN_EPS)
        self.dropout = nn.Dropout(DROPOUT)
        self.layers = nn.ModuleList(
            EncoderLayer(h, dims["heads"], dims["ffn"]) for _ in range(dims["layers"])
        )
        self.pooler = nn.Linear(h, h)
        self.classifier = nn.Linear(h, dims["classes"])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.dropout(self.ln_embed(self.token_embedding(ids) + self.positions))
        for layer in self.layers:
            x = layer(x)
        return self.classifier(torch.tanh(self.pooler(x[:, 0, :])))

    def example_batch(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Random token ids and class labels: no dataset is downloaded."""
        ids = torch.randint(0, self.dims["vocab"], (batch_size, self.dims["seq_len"]))
        return ids, torch.randint(0, self.dims["classes"], (batch_size,))

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs.float(), targets)

    def make_optimizer(self, parameters: object) -> torch.optim.Optimizer:
        # Keras' AdamW(1e-4) decays weights by 0.004 by default; the rate changes no work
        return torch.optim.AdamW(parameters, lr=1e-4, weight_decay=0.004)  # type: ignore[arg-type]


def bert_dims(workload: str = "bert-base", **overrides: int) -> dict[str, int]:
    """The registry's sizes of ``workload`` with ``overrides`` (``seq_len=384``, ...)."""
    return WORKLOADS[workload].resolve(overrides)


def build(seq_len: int | None = None) -> nn.Module:
    """BERT-base at the workload's default sequence length (128 tokens)."""
    return Bert(bert_dims("bert-base", **({"seq_len": seq_len} if seq_len else {})))


def build_tiny() -> nn.Module:
    """The workload's test size (2 layers, hidden 32, 16 tokens): a CPU trains it at once."""
    return Bert({**bert_dims(), **WORKLOADS["bert-base"].tiny})


def build_squad() -> nn.Module:
    """BERT-base at 384 tokens, the published PyTorch SQuAD rows' shape."""
    return Bert(bert_dims(seq_len=SQUAD_SEQ_LEN))


def build_large_squad() -> nn.Module:
    """BERT-large (24 layers, hidden 1024, 16 heads, FFN 4096) at 384 tokens."""
    return Bert(bert_dims("bert-large", seq_len=SQUAD_SEQ_LEN))
