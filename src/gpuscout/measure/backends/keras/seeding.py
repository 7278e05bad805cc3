"""Seeding Keras on a backend other than TensorFlow (JAX, PyTorch) without importing TensorFlow.

Takes ``keras`` as an argument and imports nothing at module level, so a backend's runtime can
import it before it has chosen Keras' backend.
"""

from __future__ import annotations

from typing import Any


def seed_keras(keras: Any, seed: int) -> None:
    """``keras.utils.set_random_seed`` without TensorFlow's seed: where TensorFlow is installed,
    Keras imports it just to seed it (4.7 s on this project's CPU machines, and TensorFlow's
    memory in a JAX or PyTorch process), and such a run has no tf.data to seed. Keras' lazy
    handle on TensorFlow reads as unavailable during the call; a Keras without that handle seeds
    as usual.
    """
    try:
        from keras.src.utils import module_utils

        lazy = module_utils.tensorflow
        saved = lazy._available
    except (ImportError, AttributeError):
        keras.utils.set_random_seed(seed)
        return
    lazy._available = False
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy._available = saved
