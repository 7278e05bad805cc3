"""A small transformer encoder classifier: ``--model examples/models/transformer.py:build``.

Sequences of 256 token ids (8,000-word vocabulary), width 256, 4 heads, 4 blocks, 2 classes:
about 4 M parameters.
"""

import keras

SEQ_LEN = 256
VOCAB = 8_000
WIDTH = 256
HEADS = 4
BLOCKS = 4


def _block(x: keras.KerasTensor) -> keras.KerasTensor:
    attended = keras.layers.MultiHeadAttention(HEADS, WIDTH // HEADS)(x, x)
    x = keras.layers.LayerNormalization()(x + attended)
    hidden = keras.layers.Dense(4 * WIDTH, activation="gelu")(x)
    return keras.layers.LayerNormalization()(x + keras.layers.Dense(WIDTH)(hidden))


def build() -> keras.Model:
    inputs = keras.Input((SEQ_LEN,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, WIDTH)(inputs)
    for _ in range(BLOCKS):
        x = _block(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(2)(x)
    model = keras.Model(inputs, outputs, name="small_transformer")
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model
