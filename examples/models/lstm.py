"""A BiLSTM text classifier: what ``--model examples/models/lstm.py:build`` traces.

Sequences of 128 token ids from a 20,000-word vocabulary, a 128-wide embedding, one
bidirectional LSTM of 128 units per direction, 2 classes. The recurrent layer is a loop in
the compiled step (an HLO ``while`` of 128 iterations), which gpuscout counts per iteration.
"""

import keras

SEQ_LEN = 128
VOCAB = 20_000
UNITS = 128


def build() -> keras.Model:
    inputs = keras.Input((SEQ_LEN,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, 128)(inputs)
    x = keras.layers.Bidirectional(keras.layers.LSTM(UNITS))(x)
    outputs = keras.layers.Dense(2)(x)
    model = keras.Model(inputs, outputs, name="bilstm_classifier")
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model
