"""User files for the JAX backend's tests: a Keras model and NumPy data, without TensorFlow
(what a JAX user passes to ``--model`` and ``--data``)."""

import keras
import numpy as np


def classifier():
    inputs = keras.Input((20,))
    x = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(5)(x))


def _samples():
    rng = np.random.default_rng(1)
    return rng.random((64, 20), dtype=np.float32), rng.integers(0, 5, 64).astype("int32")


def batches(prefetch=False, parallel=False, cache=False):
    """A generator of batches that takes doctor's fixes (and, being a sketch, ignores them)."""
    x, y = _samples()
    return ((np.tanh(x[i : i + 16]), y[i : i + 16]) for i in range(0, 64, 16))


class Sequence(keras.utils.PyDataset):
    """Batches by index, as Keras users write a data loader that works on every backend."""

    def __init__(self):
        super().__init__()
        self.x, self.y = _samples()

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.tanh(self.x[16 * i : 16 * (i + 1)]), self.y[16 * i : 16 * (i + 1)]


def sequence():
    return Sequence()
