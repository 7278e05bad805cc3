"""The TensorFlow measuring backend: the workloads in Keras, the timed train step, tf.data
pipelines, ``tf.distribute`` strategies, serving, the step's HLO, the doctor's and soak's
trials, ScoutCallback's timer and the TensorBoard writer.

Every module here may import TensorFlow or Keras; nothing outside ``measure/backends/`` may.
The entry of a measurement is :func:`backend.run` (called by ``measure.benchmark.bench``).
"""
