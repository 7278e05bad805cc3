"""A small image classifier: what ``--model examples/models/cnn.py:build`` traces.

32x32 RGB images, 10 classes (CIFAR-10's shape); about 0.3 M parameters. Integer labels, so
the synthetic batch gpuscout makes has the right shape without a dataset.
"""

import keras


def build() -> keras.Model:
    inputs = keras.Input((32, 32, 3))
    x = inputs
    for filters in (32, 64, 128):
        x = keras.layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(10)(x)
    model = keras.Model(inputs, outputs, name="small_cnn")
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model
