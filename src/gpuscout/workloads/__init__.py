"""The registry of built-in workloads: what each one is, its shapes, its epoch and its FLOPs.

The Llama-style fine-tuning workloads are in ``workloads/llm.py``; ``Workload`` itself in
``workloads/base.py``.

Deliberately free of TensorFlow: listing workloads, validating a name or projecting an epoch
must not pay for importing TensorFlow. The Keras code that builds each model lives in
``measure/backends/tensorflow/models.py`` (bert-large and GPT-2: ``transformers.py`` beside it)
and is looked up by name only when a measurement starts.

FLOPs are *training* FLOPs per sample, counted as 3 x the forward pass's multiply-adds x 2
(forward, plus backward for activations and for weights); biases, activations, normalisation
and the optimizer update are not counted. This is the convention MFU figures are quoted in.
Transformer workloads count attention over the full L x L score matrix, causal or not: Keras'
MultiHeadAttention masks the scores after computing all of them, so that is the work done.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from gpuscout.core import articles
from gpuscout.core.errors import UserError, did_you_mean
from gpuscout.workloads.base import Dims as Dims
from gpuscout.workloads.base import Workload as Workload
from gpuscout.workloads.llm import LLAMA_WORKLOADS

# The seed MLP's shape, as the articles give it (``articles.py``): the mlp workload and the
# doctor's demo share it.
_SEED_MLP_DIMS = {
    "inputs": articles.SEED_MLP_INPUTS,
    "hidden": articles.SEED_MLP_HIDDEN,
    "classes": articles.SEED_MLP_CLASSES,
}


def _mlp_flops(d: Dims) -> float:
    macs = d["inputs"] * d["hidden"] + d["hidden"] * d["classes"]
    return 3 * 2 * macs


def _cnn_small_flops(d: Dims) -> float:
    s, f = d["image_size"], d["filters"]
    macs = s * s * 3 * 3 * 3 * f  # conv 3x3, 3 -> f, 'same'
    s2 = s // 2
    macs += s2 * s2 * 3 * 3 * f * (2 * f)  # after 2x2 pool: conv 3x3, f -> 2f
    s4 = s2 // 2
    macs += s4 * s4 * 2 * f * 128 + 128 * d["classes"]  # flatten -> dense 128 -> classes
    return 3 * 2 * macs


def _conv_out(size: int, stride: int) -> int:
    return -(-size // stride)  # 'same'-style ceil division, as Keras' ResNet50 shapes work out


def resnet50_forward_macs(image_size: int, classes: int, stride_on_3x3: bool = False) -> int:
    """Multiply-adds of one forward pass of ResNet-50, counted exactly.

    Stem 7x7/2 conv (3 -> 64) and 3x3/2 max-pool, then bottleneck stages of (3, 4, 6, 3)
    blocks, a 1x1 projection shortcut (with the stride) in the first block of each stage.
    Keras' ``ResNet50`` is v1: the downsampling blocks put the stride on their first 1x1 conv.
    ``stride_on_3x3`` counts v1.5 (NVIDIA DeepLearningExamples, torchvision), which puts it on
    the 3x3 conv: the three downsampling blocks' first 1x1 conv then runs at the input's
    resolution, 4x its v1 work (3.86 -> 4.09 GMAC at 224 px).
    """
    s = (image_size + 6 - 7) // 2 + 1  # ZeroPadding2D(3) + Conv 7x7 stride 2 'valid'
    macs = s * s * 7 * 7 * 3 * 64
    s = (s + 2 - 3) // 2 + 1  # ZeroPadding2D(1) + MaxPool 3x3 stride 2
    c_in = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            stride = 2 if (block == 0 and stage > 0) else 1
            s_out = _conv_out(s, stride)
            if block == 0:
                macs += s_out * s_out * c_in * 4 * width  # projection shortcut 1x1
            s_reduce = s if stride_on_3x3 else s_out  # where the 1x1 reduce runs
            macs += s_reduce * s_reduce * c_in * width  # 1x1 reduce
            macs += s_out * s_out * 9 * width * width  # 3x3
            macs += s_out * s_out * width * 4 * width  # 1x1 expand
            c_in, s = 4 * width, s_out
    return macs + c_in * classes


def _resnet50_flops(d: Dims) -> float:
    return 3 * 2 * resnet50_forward_macs(d["image_size"], d["classes"])


def _resnet50_v15_flops(d: Dims) -> float:
    return 3 * 2 * resnet50_forward_macs(d["image_size"], d["classes"], stride_on_3x3=True)


def bert_forward_macs(d: Dims) -> int:
    """Multiply-adds of one sequence through a BERT-style encoder with a classification head.

    Per layer and token: Q, K, V and output projections 4*h^2, feed-forward 2*h*ffn; per layer
    and sequence, attention scores and the weighted sum 2*L^2*h. Head: pooler h^2 + h*classes.
    Embedding look-ups are gathers, not multiply-adds.
    """
    length, h, ffn = d["seq_len"], d["hidden"], d["ffn"]
    per_layer = length * (4 * h * h + 2 * h * ffn) + 2 * length * length * h
    return d["layers"] * per_layer + h * h + h * d["classes"]


def _bert_flops(d: Dims) -> float:
    return 3 * 2 * bert_forward_macs(d)


def gpt2_forward_macs(d: Dims) -> int:
    """Multiply-adds of one sequence through a GPT-2-style decoder, counted exactly.

    Per layer and token: Q, K, V and output projections 4*h^2, feed-forward 2*h*ffn; per layer
    and sequence, attention scores and the weighted sum 2*L^2*h (the full square: the causal
    mask is applied to the scores, not used to skip work). The language-model head, the
    transposed token embedding (tied), h*vocab per token. Embedding look-ups are gathers.
    """
    length, h, ffn = d["seq_len"], d["hidden"], d["ffn"]
    per_layer = length * (4 * h * h + 2 * h * ffn) + 2 * length * length * h
    return d["layers"] * per_layer + length * h * d["vocab"]


def _gpt2_flops(d: Dims) -> float:
    return 3 * 2 * gpt2_forward_macs(d)


# BERT-large's sizes (Devlin et al. 2019): the bert-large workload, and published results.
BERT_LARGE: Mapping[str, int] = {"layers": 24, "hidden": 1024, "heads": 16, "ffn": 4096}
_BERT_BASE_DIMS = {
    "seq_len": 128,
    "layers": 12,
    "hidden": 768,
    "heads": 12,
    "ffn": 3072,
    "vocab": 30522,
    "classes": 2,
}
_BERT_TINY = {"seq_len": 16, "layers": 2, "hidden": 32, "heads": 2, "ffn": 64, "vocab": 100}

# GPT-2's context window: its learned position table has 1,024 rows (Radford et al. 2019).
GPT2_CONTEXT = 1024
# OpenWebText in GPT-2 tokens, as nanoGPT's data/openwebtext/prepare.py counts its train split
# (9,035,582,198 tokens), in sequences of GPT2_CONTEXT tokens: the open stand-in for GPT-2's
# WebText that GPT-2 reproductions train on.
OPENWEBTEXT_SEQUENCES = 9_035_582_198 // GPT2_CONTEXT
# (layers, hidden, heads) of the released GPT-2 sizes (Radford et al. 2019; Hugging Face's
# gpt2, gpt2-medium and gpt2-large configs): FFN 4 x hidden, vocabulary 50,257.
_GPT2_SIZES = {
    "gpt2": (12, 768, 12, "124M"),
    "gpt2-medium": (24, 1024, 16, "355M"),
    "gpt2-large": (36, 1280, 20, "774M"),
}


def _bert(name: str, description: str, dims: dict[str, int], batch_cpu: int) -> Workload:
    """bert-base and bert-large: one model at two sizes."""
    return Workload(
        name=name,
        description=description,
        epoch_samples=1_000_000,
        epoch_unit="sequences",
        default_batch_gpu=32,
        default_batch_cpu=batch_cpu,
        dims=dims,
        tiny=dict(_BERT_TINY),
        input_shape=lambda d: (d["seq_len"],),
        input_dtype="int32",
        label_shape=(),
        flops_per_sample=_bert_flops,
        flops_note="analytic: 6 x non-embedding parameters per token plus attention",
        settable=("seq_len",),
        default_epochs=3,
        default_epochs_why="3 epochs, within the 2-4 the BERT paper recommends for fine-tuning",
    )


def _gpt2(name: str) -> Workload:
    layers, hidden, heads, size = _GPT2_SIZES[name]
    return Workload(
        name=name,
        description=f"A GPT-2 {size}-shaped decoder from Keras layers ({layers} layers, hidden "
        f"{hidden}, {heads} heads, FFN {4 * hidden}, vocab 50257, context up to "
        f"{GPT2_CONTEXT:,}): causal attention, learned positions, pre-LayerNorm and a final "
        "LayerNorm, GELU, the output projection tied to the token embedding; trained on the "
        "next token at every position; AdamW; random token ids, no downloads. Epoch = "
        f"OpenWebText, {OPENWEBTEXT_SEQUENCES:,} sequences of {GPT2_CONTEXT:,} tokens.",
        epoch_samples=OPENWEBTEXT_SEQUENCES,
        epoch_unit="sequences",
        default_batch_gpu=8,
        default_batch_cpu=1,
        dims={
            "seq_len": GPT2_CONTEXT,
            "layers": layers,
            "hidden": hidden,
            "heads": heads,
            "ffn": 4 * hidden,
            "vocab": 50257,
        },
        tiny={"seq_len": 16, "layers": 2, "hidden": 32, "heads": 2, "ffn": 128, "vocab": 100},
        input_shape=lambda d: (d["seq_len"],),
        input_dtype="int32",
        label_shape=(),
        flops_per_sample=_gpt2_flops,
        flops_note="analytic: 6 x non-embedding parameters per token, plus attention over the "
        "full L x L scores, plus the tied output projection (6 x hidden x vocab per token)",
        settable=("seq_len",),
        default_epochs=1,
        default_epochs_why="one pass over OpenWebText (9.0 billion tokens), a fine-tuning-"
        "sized run; nanoGPT's from-scratch GPT-2 reproduction trains on ~300 billion",
        task="causal-lm",
        max_dims={"seq_len": (GPT2_CONTEXT, "GPT-2's context: its position table has 1,024 rows")},
    )


# What both ResNet-50s share: ImageNet-1k at 224 px, its epoch, batch and schedule.
_imagenet = partial(
    Workload,
    epoch_samples=1_281_167,
    epoch_unit="images",
    default_batch_gpu=256,
    default_batch_cpu=8,
    dims={"image_size": 224, "classes": 1000},
    tiny={"image_size": 32, "classes": 10},
    input_shape=lambda d: (d["image_size"], d["image_size"], 3),
    input_dtype="float32",
    label_shape=(),
    default_epochs=90,
    default_epochs_why="90 epochs, the standard ImageNet schedule for ResNet-50 (He et al. "
    "2016; Goyal et al. 2017)",
)

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            name="mlp",
            description="The seed model of article 000 (see gpuscout.core.articles): "
            f"Input({articles.SEED_MLP_INPUTS}) -> Dense({articles.SEED_MLP_HIDDEN}, relu) -> "
            f"Dropout({articles.SEED_MLP_DROPOUT:g}) -> Dense({articles.SEED_MLP_CLASSES}, "
            "softmax); Adam; sparse categorical cross-entropy. Epoch = 60,000 samples, an "
            "MNIST-sized training set (the article names no data set).",
            epoch_samples=60_000,
            epoch_unit="samples",
            default_batch_gpu=256,
            default_batch_cpu=256,
            dims=dict(_SEED_MLP_DIMS),
            tiny={},
            input_shape=lambda d: (d["inputs"],),
            input_dtype="float32",
            label_shape=(),
            flops_per_sample=_mlp_flops,
            flops_note="analytic, exact for the dense layers",
            default_epochs=20,
            default_epochs_why="20 epochs, as Keras' classic MNIST MLP example trains",
        ),
        Workload(
            name="cnn-small",
            description="A small CNN on 32x32x3 images (two conv + pool blocks, dense 128, "
            "10 classes); trains in seconds, for tests and demos.",
            epoch_samples=50_000,
            epoch_unit="images",
            default_batch_gpu=256,
            default_batch_cpu=64,
            dims={"image_size": 32, "filters": 32, "classes": 10},
            tiny={"image_size": 16, "filters": 8},
            input_shape=lambda d: (d["image_size"], d["image_size"], 3),
            input_dtype="float32",
            label_shape=(),
            flops_per_sample=_cnn_small_flops,
            flops_note="analytic, exact for the conv and dense layers",
            default_epochs=20,
            default_epochs_why="20 epochs, a short CIFAR-10-sized training run",
        ),
        _imagenet(
            name="resnet50",
            description="keras.applications.ResNet50(weights=None), 224x224x3, 1000 classes, "
            "SGD with momentum 0.9; epoch = ImageNet-1k train set.",
            flops_per_sample=_resnet50_flops,
            flops_note="analytic, exact for the conv and dense layers: 3.86 GMAC forward at 224 px "
            "(Keras' ResNet50 is v1, stride on the 1x1 conv; the 4.1 GMAC often quoted is v1.5)",
        ),
        _imagenet(
            name="resnet50-v1.5",
            description="ResNet-50 v1.5 in Keras: keras.applications.ResNet50 with the stride "
            "of each stage's first bottleneck moved from its first 1x1 conv to its 3x3 conv, as "
            "NVIDIA's DeepLearningExamples and torchvision build it (the ResNet-50 most "
            "published PyTorch results train; predict/data/resnet50_variants.csv says which); "
            "224x224x3, 1000 classes, SGD with momentum 0.9; epoch = ImageNet-1k train set.",
            flops_per_sample=_resnet50_v15_flops,
            flops_note="analytic, exact for the conv and dense layers: 4.09 GMAC forward at 224 "
            "px (v1.5, stride on the 3x3 conv: the downsampling blocks' first 1x1 conv runs at "
            "4x v1's resolution, +231 M MACs)",
        ),
        _bert(
            "bert-base",
            "A BERT-base-shaped encoder from Keras layers (12 layers, hidden 768, 12 heads, FFN "
            "3072, vocab 30522) with a 2-class sequence-classification head; AdamW; random "
            "token ids, no downloads.",
            dict(_BERT_BASE_DIMS),
            batch_cpu=4,
        ),
        _bert(
            "bert-large",
            "A BERT-large-shaped encoder from Keras layers (24 layers, hidden 1024, 16 heads, "
            "FFN 4096, vocab 30522), the same model as bert-base at BERT-large's sizes, with a "
            "2-class sequence-classification head; AdamW; random token ids, no downloads.",
            {**_BERT_BASE_DIMS, **BERT_LARGE},
            batch_cpu=2,
        ),
        *(_gpt2(name) for name in _GPT2_SIZES),
        Workload(
            name="input-bound-demo",
            description="The seed MLP fed by a deliberately slow input pipeline: each sample "
            "goes through Python-side preprocessing (tf.numpy_function) one at a time, "
            "unbatched, unparallelised, uncached and not prefetched; for gpuscout doctor.",
            epoch_samples=2048,
            epoch_unit="samples",
            default_batch_gpu=256,
            default_batch_cpu=128,
            dims={
                **_SEED_MLP_DIMS,
                "samples": 2048,
                "work": 8,
            },
            tiny={"samples": 512, "work": 4},
            input_shape=lambda d: (d["inputs"],),
            input_dtype="float32",
            label_shape=(),
            flops_per_sample=_mlp_flops,
            flops_note="analytic, exact for the dense layers",
            has_pipeline=True,
        ),
        *LLAMA_WORKLOADS,
    )
}


def run_shape(workload: str, dims: Mapping[str, int]) -> tuple[int | None, str]:
    """Tokens per sample (a language model's sequence length, else None) and the settings a
    reader needs to know what a run trained ("sequence 2,048 tokens · LoRA rank 64, base
    frozen"); (None, "") for a workload without a sequence or not built in (a user's model)."""
    w = WORKLOADS.get(workload)
    if w is None or "seq_len" not in w.dims:
        return None, ""
    d = {**w.dims, **dims}
    text = f"sequence {d['seq_len']:,} tokens"
    if d.get("lora_rank"):
        text += f" · LoRA rank {d['lora_rank']}, base frozen"
    elif "lora_rank" in d:
        text += " · every weight trained"
    if d.get("checkpointing"):
        text += " · gradient checkpointing"
    return (d["seq_len"] if w.task == "causal-lm" else None), text


def get_workload(name: str, *, own_model: bool = True) -> Workload:
    """The workload called ``name``, or a user error listing the valid names.

    ``own_model``: the command has ``--model`` too, so the error may suggest it (a command
    without it must not: the error would name an option it refuses).
    """
    try:
        return WORKLOADS[name]
    except KeyError:
        names = ", ".join(WORKLOADS)
        also = ", or --model FILE.py:FUNCTION for your own model" if own_model else ""
        raise UserError(
            f"unknown workload '{name}'.{did_you_mean(name, WORKLOADS)}",
            f"use one of: {names}{also}.",
        ) from None
