"""User model files for tests: what people pass to ``--model FILE.py:FUNCTION``."""

import keras
import tensorflow as tf


def compiled_regressor():
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    return model


def uncompiled_classifier():
    inputs = keras.Input((20,))
    x = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(5)(x))


def not_a_model():
    return {"layers": 3}


def dataset():
    x = tf.random.uniform((64, 20))
    y = tf.random.uniform((64,), maxval=5, dtype=tf.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(16)


def dataset_with_knobs(prefetch=False, parallel=False, cache=False):
    """A pipeline that applies gpuscout doctor's fixes itself, where they belong."""
    x = tf.random.uniform((64, 20), seed=1)
    y = tf.random.uniform((64,), maxval=5, dtype=tf.int32, seed=2)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.map(lambda a, b: (tf.math.tanh(a), b), num_parallel_calls=4 if parallel else None)
    if cache:
        ds = ds.cache()
    ds = ds.batch(16)
    return ds.prefetch(2) if prefetch else ds


def runs_out_of_memory():
    # What TensorFlow raises when an allocation fails on a device; a CPU rarely gets there,
    # so the model function raises the real exception type itself.
    raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor [4096,4096]")


def crashes_the_process():
    # A hard crash (as a segfault in a kernel or the kernel's OOM killer would cause).
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def prints_to_stdout():
    print("hello from the user's model")
    return uncompiled_classifier()


def hangs():
    # Never returns, as a step on a wedged device would not.
    import time

    time.sleep(3600)


def dies_on_worker_1():
    """A model whose second worker dies while building it: a crashed worker, on demand."""
    import json
    import os

    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("index", 0)
    if task == 1:
        os._exit(3)
    return uncompiled_classifier()


def raises():
    """A builder with a bug in it: fails before anything is measured."""
    raise ValueError("width must be positive, got -1")


def needs_an_argument(width):
    """A builder that takes an argument gpuscout cannot supply."""
    return keras.Sequential([keras.Input((width,)), keras.layers.Dense(1)])


def no_input_layer():
    """A Sequential model never told its input shape: it has no inputs to feed."""
    return keras.Sequential([keras.layers.Dense(8), keras.layers.Dense(1)])


def returns_an_int():
    return 3


def empty_dataset():
    """A pipeline with no batch in it (a filter that drops everything, a wrong file pattern)."""
    return dataset().take(0)
