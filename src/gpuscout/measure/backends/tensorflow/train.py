"""The two ways a training step is timed on TensorFlow: gpuscout's own loop, and Keras'
``model.fit`` (shared with the JAX backend: ``backends/keras/fit.py``).

Both run the same model, data and optimizer, and both hand each step's wall time to the same
:class:`~gpuscout.measure.protocol.Protocol`; only who drives the loop differs. Each step is
synchronised (the loss is fetched to the host, and on a GPU all queued work is awaited) before
its time is taken, so asynchronous dispatch cannot make a step look faster than it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.measure.backends.keras.fit import fit_loop, with_loss_scaling
from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.protocol import Outcome, Protocol


def train_step_function(
    tf: Any, built: Built, precision: str, jit_compile: bool, replicas: int = 1
) -> Any:
    """The ``tf.function`` that trains one batch: forward, loss, gradients, update.

    Shared by the timed loop, the data-parallel loop and the cost profile, so the profile
    counts the step that runs. Under a strategy with ``replicas`` replicas each one's loss is
    divided by that count: the all-reduced (summed) gradients are then the global batch's.
    """
    model, loss_fn = built.model, built.loss
    optimizer = with_loss_scaling(built.optimizer, precision)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=jit_compile)  # type: ignore[untyped-decorator]
    def step_on_batch(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            pred = model(x, training=True)
            loss = loss_fn(y, tf.cast(pred, tf.float32))
            if replicas > 1:  # decided when traced: a one-device graph is left as it was
                loss = loss / replicas
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return step_on_batch


def custom_loop(
    tf: Any,
    built: Built,
    dataset: Any,
    precision: str,
    xla: bool,
    protocol: Protocol,
    sync: Callable[[], None],
) -> Outcome:
    """A ``tf.function`` train step with ``GradientTape``: article 001's custom loop
    (gpuscout.core.articles)."""
    step_on_batch = train_step_function(tf, built, precision, xla)

    @tf.function  # type: ignore[untyped-decorator]
    def train_step(iterator: Any) -> Any:
        x, y = next(iterator)  # outside the XLA cluster: the iterator op cannot be compiled
        return step_on_batch(x, y)

    iterator = iter(dataset)

    def one_step() -> Any:
        loss = train_step(iterator).numpy()  # the fetch that synchronises the step
        sync()
        return loss

    return protocol.run(one_step, returns_loss=True)


__all__ = ["custom_loop", "fit_loop", "train_step_function"]
