"""The JAX measuring backend: the same Keras 3 workloads (``backends/keras``), trained by a
stateless step compiled with ``jax.jit`` (``stateless_call`` + ``jax.value_and_grad``, the state
threaded through, its buffers donated), each step awaited with ``block_until_ready``.

Only the measuring child imports it, after setting ``KERAS_BACKEND=jax`` (``measure/child.py``):
Keras picks its backend once, when first imported. The entry is :func:`backend.run`.
"""
