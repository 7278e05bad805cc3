"""Keras code for the built-in workloads (see ``workloads/`` for what each one is).

Each builder returns the model, its loss and its optimizer. Under a mixed-precision policy the
last layer is kept in float32, as Keras' mixed-precision guide prescribes, so the loss is
computed in full precision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras

from gpuscout.core.articles import SEED_MLP_DROPOUT
from gpuscout.measure.backends.keras.llama import build_llama
from gpuscout.measure.backends.keras.transformers import build_bert_large, build_gpt2
from gpuscout.workloads import Dims
from gpuscout.workloads.llm import LLAMA_WORKLOADS


@dataclass(frozen=True)
class Built:
    model: Any  # keras.Model
    loss: Any  # keras loss
    optimizer: Any  # keras optimizer
    # Gradient checkpointing (the decoder LLMs' ``checkpointing`` setting): only the tensors
    # named as a block's input are kept between the passes (keras/llama.py's BlockInput)
    checkpointing: bool = False


def _sparse_ce(from_logits: bool = False) -> Any:
    return keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits)


def build_mlp(d: Dims) -> Built:
    """The seed model of article 000 (gpuscout.core.articles), its sizes from ``d``."""
    model = keras.Sequential(
        [
            keras.Input((d["inputs"],)),
            keras.layers.Dense(d["hidden"], activation="relu"),
            keras.layers.Dropout(SEED_MLP_DROPOUT),
            keras.layers.Dense(d["classes"], activation="softmax", dtype="float32"),
        ],
        name="mlp",
    )
    return Built(model, _sparse_ce(), keras.optimizers.Adam(1e-3))


def build_cnn_small(d: Dims) -> Built:
    s, f = d["image_size"], d["filters"]
    model = keras.Sequential(
        [
            keras.Input((s, s, 3)),
            keras.layers.Conv2D(f, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(2 * f, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(d["classes"], activation="softmax", dtype="float32"),
        ],
        name="cnn_small",
    )
    return Built(model, _sparse_ce(), keras.optimizers.Adam(1e-3))


def build_resnet50(d: Dims) -> Built:
    s = d["image_size"]
    base = keras.applications.ResNet50(
        weights=None, input_shape=(s, s, 3), classes=d["classes"], classifier_activation=None
    )
    probs = keras.layers.Activation("softmax", dtype="float32", name="probs")(base.output)
    model = keras.Model(base.input, probs, name="resnet50")
    return Built(model, _sparse_ce(), keras.optimizers.SGD(0.1, momentum=0.9))


def _bottleneck_v15(x: Any, filters: int, stride: int, projection: bool, name: str) -> Any:
    """One ResNet v1.5 bottleneck block: Keras' ``ResNet50`` block (the same layers, names,
    biases and batch-norm epsilon) with the stride on the 3x3 conv instead of the first 1x1,
    so a v1.5 profile differs from the v1 one by the stride's place and nothing else."""
    layers = keras.layers
    shortcut = x
    if projection:  # the projection shortcut keeps the stride, as in v1
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_0_bn")(
            shortcut
        )
    x = layers.Conv2D(filters, 1, name=f"{name}_1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.Conv2D(filters, 3, strides=stride, padding="same", name=f"{name}_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_3_bn")(x)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def build_resnet50_v15(d: Dims) -> Built:
    """ResNet-50 v1.5, the variant NVIDIA's DeepLearningExamples and Lambda's PyTorch benchmark
    train (``predict/data/resnet50_variants.csv``): Keras has no v1.5, so it is Keras'
    ``ResNet50`` stem and head around :func:`_bottleneck_v15` blocks."""
    layers = keras.layers
    s = d["image_size"]
    inputs = keras.Input((s, s, 3))
    x = layers.ZeroPadding2D(3, name="conv1_pad")(inputs)
    x = layers.Conv2D(64, 7, strides=2, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(1, name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    for stage, (blocks, filters) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            x = _bottleneck_v15(x, filters, stride, block == 0, f"conv{stage + 2}_block{block + 1}")
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    logits = layers.Dense(d["classes"], name="predictions")(x)
    probs = layers.Activation("softmax", dtype="float32", name="probs")(logits)
    model = keras.Model(inputs, probs, name="resnet50_v1_5")
    return Built(model, _sparse_ce(), keras.optimizers.SGD(0.1, momentum=0.9))


class PositionEmbedding(keras.layers.Layer):  # type: ignore[misc]
    """Learned absolute position embeddings added to the token embeddings (as in BERT)."""

    def __init__(self, length: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.length = length

    def build(self, input_shape: Any) -> None:
        self.positions = self.add_weight(
            shape=(self.length, input_shape[-1]), initializer="glorot_uniform", name="positions"
        )

    def call(self, x: Any) -> Any:
        return x + keras.ops.cast(self.positions, x.dtype)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "length": self.length}


def _encoder_layer(x: Any, d: Dims, i: int) -> Any:
    h = d["hidden"]
    attn = keras.layers.MultiHeadAttention(d["heads"], h // d["heads"], name=f"attn_{i}")(x, x)
    x = keras.layers.LayerNormalization(epsilon=1e-12, name=f"ln_attn_{i}")(
        x + keras.layers.Dropout(0.1)(attn)
    )
    ff = keras.layers.Dense(d["ffn"], activation="gelu", name=f"ffn_in_{i}")(x)
    ff = keras.layers.Dense(h, name=f"ffn_out_{i}")(ff)
    return keras.layers.LayerNormalization(epsilon=1e-12, name=f"ln_ffn_{i}")(
        x + keras.layers.Dropout(0.1)(ff)
    )


def build_bert(d: Dims) -> Built:
    ids = keras.Input((d["seq_len"],), dtype="int32", name="token_ids")
    x = keras.layers.Embedding(d["vocab"], d["hidden"], name="token_embedding")(ids)
    x = PositionEmbedding(d["seq_len"], name="position_embedding")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-12, name="ln_embed")(x)
    x = keras.layers.Dropout(0.1)(x)
    for i in range(d["layers"]):
        x = _encoder_layer(x, d, i)
    pooled = keras.layers.Dense(d["hidden"], activation="tanh", name="pooler")(x[:, 0, :])
    logits = keras.layers.Dense(d["classes"], dtype="float32", name="classifier")(pooled)
    model = keras.Model(ids, logits, name="bert_base")
    return Built(model, _sparse_ce(from_logits=True), keras.optimizers.AdamW(1e-4))


BUILDERS: dict[str, Callable[[Dims], Built]] = {
    "mlp": build_mlp,
    "cnn-small": build_cnn_small,
    "resnet50": build_resnet50,
    "resnet50-v1.5": build_resnet50_v15,
    "bert-base": build_bert,
    "bert-large": build_bert_large,
    "gpt2": build_gpt2,
    "gpt2-medium": build_gpt2,
    "gpt2-large": build_gpt2,
    "input-bound-demo": build_mlp,
    **{w.name: build_llama for w in LLAMA_WORKLOADS},
}
