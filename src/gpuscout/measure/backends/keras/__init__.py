"""Keras 3 code every measuring backend shares: the built-in workloads as Keras models.

Pure Keras (``import keras``): the same model code runs on TensorFlow and on JAX, whichever
backend Keras was started with (``KERAS_BACKEND``, set by the measuring child before Keras is
imported). Like every module under ``measure/backends/``, only the measuring stage imports it.
"""
