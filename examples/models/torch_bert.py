"""BERT-base in plain PyTorch, as the ``bert-base`` workload builds it in Keras: what
``--model examples/models/torch_bert.py:build`` measures, traces and prices (no download, no
``transformers``; the protocol is in docs/torch.md).

The sizes are the registry's (``gpuscout.workloads``: 12 layers, hidden 768, 12 heads, FFN 3072,
vocabulary 30522, 2 classes), read from it so the two cannot drift apart. The layers are the
Keras model's (``measure/backends/keras/models.build_bert``), one for one, so the parameter
counts are equal: token embeddings plus a learned position table as long as the sequence, layer
norm (eps 1e-12) and dropout 0.1 on their sum; post-LN encoder layers, x = LN(x + attention(x)),
x = LN(x + FFN(x)), with biased Q, K, V and output projections and a GELU FFN; a tanh pooler on
the first token and a 2-class classifier. AdamW (lr 1e-4), cross-entropy.

Attention comes two ways (``attention=``), the same function of the same weights:

- ``"sdpa"`` (``build()``'s default): ``torch.nn.functional.scaled_dot_product_attention``, the
  fused (flash) kernel a modern PyTorch runs, which never writes the L x L scores; no dropout on
  the probabilities (Keras' ``MultiHeadAttention`` at its default), exact (erf) GELU.
- ``"unfused"``: the attention the published PyTorch BERT rows ran. Lambda's PyTorch benchmark
  (lambdal/deeplearning-benchmark@357c49a7 ``pytorch/scripts/config_v1/config_pytorch_80GB.sh``:
  ``benchmark/LanguageModeling/BERT``, SQuAD at 384 tokens; ``pytorch/README.md``@044be4b0: NGC
  ``pytorch:22.09-py3`` and later, Lambda's fork of DeepLearningExamples, branch
  ``lambda/benchmark``) runs NVIDIA DeepLearningExamples' PyTorch BERT, whose fork's
  ``run_squad.py`` (LambdaLabsML/DeepLearningExamples@b5e12513) builds ``modeling.
  BertForQuestionAnswering``. Its 21.11 ``modeling.py`` (NVIDIA/DeepLearningExamples@a9e2c1d5,
  Dockerfile ``FROM pytorch:21.11-py3``) runs the encoder sequence-first ([L, B, hidden]) and
  ``BertSelfAttention`` as separate kernels: ``torch.bmm`` of the queries and transposed keys
  into [B x heads, L, L] scores, divided by sqrt(head size), plus the additive mask ((1 - mask)
  x -10000, in the weights' dtype), ``F.softmax``, dropout 0.1 on the probabilities,
  ``torch.bmm`` with the values, then ``transpose(0, 1).contiguous()``; dropout after the
  attention's and the FFN's output projections, before each residual and ``nn.LayerNorm``; the
  FFN's ``LinearActivation`` is a biased linear then ``F.gelu(x, approximate=True)`` (tanh).
  ``build_squad`` and ``build_large_squad`` build this one.

What the unfused structure does not copy, each said where the published rows are modelled: the
fork's own ``modeling.py`` is not in the code index (its README says it patches the examples to
run on recent NGC; ``approximate=True`` is not accepted by PyTorch >= 1.12's ``F.gelu``, so its
GELU may be exact: either is one elementwise kernel); ``--fp16`` runs apex AMP O2 (the model cast
to half, fp32 master weights, apex ``FusedAdam``; fp32: ``BertAdam``, a per-tensor loop) where
the capture runs ``torch.autocast`` and AdamW's multi-tensor kernels (the mask is added in the
scores' dtype here, as O2's half weights make it); the gradient clipping (apex
``multi_tensor_l2norm``) is left out. Compared with Google's BERT (and NVIDIA's) it has no
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
ATTENTIONS = ("sdpa", "unfused")
MASKED = -10000.0  # DeepLearningExamples' additive mask for a padded position


class EncoderLayer(nn.Module):
    """Post-LN: attention, residual, LN; FFN, residual, LN (Keras' ``_encoder_layer``). Its
    input is [batch, L, hidden] with ``"sdpa"``, [L, batch, hidden] with ``"unfused"``."""

    def __init__(self, hidden: int, heads: int, ffn: int, attention: str = "sdpa") -> None:
        super().__init__()
        self.heads, self.attention = heads, attention
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
        self.ln_attn = nn.LayerNorm(hidden, eps=LN_EPS)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ln_ffn = nn.LayerNorm(hidden, eps=LN_EPS)
        self.dropout = nn.Dropout(DROPOUT)
        # DeepLearningExamples' GELU is the tanh approximation; Keras' the exact one
        self.approximate = "tanh" if attention == "unfused" else "none"

    def _fused(self, x: torch.Tensor) -> torch.Tensor:
        b, length, h = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, length, self.heads, h // self.heads).transpose(1, 2)

        attn = nn.functional.scaled_dot_product_attention(
            split(self.q(x)), split(self.k(x)), split(self.v(x))
        )
        return attn.transpose(1, 2).reshape(x.shape)

    def _unfused(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``BertSelfAttention.forward`` of DeepLearningExamples' 21.11 ``modeling.py``."""
        length, b, h = x.shape
        size = h // self.heads
        q = self.q(x).view(length, b * self.heads, size).transpose(0, 1)
        k = self.k(x).view(length, b * self.heads, size).permute(1, 2, 0)
        v = self.v(x).view(length, b * self.heads, size).transpose(0, 1)
        scores = torch.bmm(q, k).view(b, self.heads, length, length) / math.sqrt(size)
        scores = scores + mask.to(scores.dtype)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        context = torch.bmm(probs.view(b * self.heads, length, length), v)
        return context.transpose(0, 1).contiguous().view(length, b, h)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        attn = self._fused(x) if mask is None else self._unfused(x, mask)
        x = self.ln_attn(x + self.dropout(self.o(attn)))
        ff = nn.functional.gelu(self.ffn_in(x), approximate=self.approximate)
        return self.ln_ffn(x + self.dropout(self.ffn_out(ff)))


class Bert(nn.Module):
    """The encoder and its sequence-classification head at the sizes in ``dims``, its
    attention one of ``ATTENTIONS``."""

    def __init__(self, dims: Mapping[str, int], attention: str = "sdpa") -> None:
        super().__init__()
        if attention not in ATTENTIONS:
            raise ValueError(
                f"attention={attention!r} is not one of {', '.join(ATTENTIONS)}: pass 'sdpa' "
                "(the fused kernel) or 'unfused' (scores in memory, as DeepLearningExamples)."
            )
        self.dims, self.attention = dict(dims), attention
        h, length = dims["hidden"], dims["seq_len"]
        self.token_embedding = nn.Embedding(dims["vocab"], h)
        # Keras' PositionEmbedding draws it glorot-uniform; the draw does not change the work
        bound = math.sqrt(6 / (length + h))
        self.positions = nn.Parameter(torch.empty(length, h).uniform_(-bound, bound))
        self.ln_embed = nn.LayerNorm(h, eps=LN_EPS)
        self.dropout = nn.Dropout(DROPOUT)
        self.layers = nn.ModuleList(
            EncoderLayer(h, dims["heads"], dims["ffn"], attention) for _ in range(dims["layers"])
        )
        self.pooler = nn.Linear(h, h)
        self.classifier = nn.Linear(h, dims["classes"])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.dropout(self.ln_embed(self.token_embedding(ids) + self.positions))
        if self.attention == "sdpa":
            for layer in self.layers:
                x = layer(x)
        else:  # BertModel.forward with no attention mask: all ones, sequence-first layers
            ones = torch.ones_like(ids).unsqueeze(1).unsqueeze(2)
            mask = (1.0 - ones.to(self.token_embedding.weight.dtype)) * MASKED
            x = x.transpose(0, 1)
            for layer in self.layers:
                x = layer(x, mask)
            x = x.transpose(0, 1).contiguous()
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


def build(seq_len: int | None = None, attention: str = "sdpa") -> nn.Module:
    """BERT-base at the workload's default sequence length (128 tokens)."""
    return Bert(bert_dims("bert-base", **({"seq_len": seq_len} if seq_len else {})), attention)


def build_tiny(attention: str = "sdpa") -> nn.Module:
    """The workload's test size (2 layers, hidden 32, 16 tokens): a CPU trains it at once."""
    return Bert({**bert_dims(), **WORKLOADS["bert-base"].tiny}, attention)


def build_tiny_unfused() -> nn.Module:
    """``build_tiny`` with the published rows' unfused attention."""
    return build_tiny("unfused")


def build_squad() -> nn.Module:
    """BERT-base at 384 tokens, the published PyTorch SQuAD rows' shape and attention."""
    return Bert(bert_dims(seq_len=SQUAD_SEQ_LEN), "unfused")


def build_large_squad() -> nn.Module:
    """BERT-large (24 layers, hidden 1024, 16 heads, FFN 4096) at 384 tokens, unfused."""
    return Bert(bert_dims("bert-large", seq_len=SQUAD_SEQ_LEN), "unfused")
