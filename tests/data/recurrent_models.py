"""Tiny recurrent models for the loop-counting tests (``--model FILE.py:FUNCTION``): sequences
of ``SEQ`` steps of ``FEATURES`` numbers, one recurrent layer, ``CLASSES`` logits. Keras lowers
each recurrent layer to an HLO ``while`` over the time steps, on TensorFlow and on JAX."""

import keras

SEQ, FEATURES, CLASSES = 16, 12, 3
LSTM_UNITS, GRU_UNITS = 8, 32
GATES_AND_UNITS = {"lstm": (4, LSTM_UNITS), "gru": (3, GRU_UNITS)}


def _classifier(layer: keras.layers.Layer, name: str) -> keras.Model:
    inputs = keras.Input((SEQ, FEATURES))
    outputs = keras.layers.Dense(CLASSES)(layer(inputs))
    model = keras.Model(inputs, outputs, name=name)
    model.compile(
        optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def lstm() -> keras.Model:
    return _classifier(keras.layers.LSTM(LSTM_UNITS), "tiny_lstm")


def gru() -> keras.Model:
    return _classifier(keras.layers.GRU(GRU_UNITS), "tiny_gru")


def training_matmul_flops(gates: int, units: int, batch: int) -> float:
    """Analytic matmul FLOPs of one training step of these models at ``batch``.

    Forward, per time step: x_t @ W (FEATURES x gates*units) and h @ U (units x gates*units),
    2 FLOPs per multiply-add: 2 * gates * units * (FEATURES + units) * batch (an LSTM has 4
    gates, a GRU 3). Backward: the weight gradients (as much again) and the gradient to h (its
    share again); the gradient to x is not computed (the inputs are data, XLA drops it). So
    3 x forward less x's gradient, for all SEQ steps, plus the classifier's Dense, 3 x its
    forward. Element-wise gate math is not a matmul and not counted here."""
    per_step = 2 * gates * units * batch * (3 * (FEATURES + units) - FEATURES)
    return SEQ * per_step + 3 * 2 * batch * units * CLASSES
