"""The two ways a training step is timed: gpuscout's own loop, and Keras' ``model.fit``.

Both run the same model, data and optimizer, and both hand each step's wall time to the same
:class:`~gpuscout.measure.protocol.Protocol`; only who drives the loop differs. Each step is
synchronised (the loss is fetched to the host, and on a GPU all queued work is awaited) before
its time is taken, so asynchronous dispatch cannot make a step look faster than it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import keras

from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.protocol import Outcome, Protocol


def _with_loss_scaling(optimizer: Any, precision: str) -> Any:
    """float16 gradients underflow without loss scaling; bfloat16 and float32 need none."""
    if precision == "mixed_float16" and not isinstance(
        optimizer, keras.optimizers.LossScaleOptimizer
    ):
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def train_step_function(
    tf: Any, built: Built, precision: str, jit_compile: bool, replicas: int = 1
) -> Any:
    """The ``tf.function`` that trains one batch: forward, loss, gradients, update.

    Shared by the timed loop, the data-parallel loop and the cost profile, so the profile
    counts the step that runs. Under a strategy with ``replicas`` replicas each one's loss is
    divided by that count: the all-reduced (summed) gradients are then the global batch's.
    """
    model, loss_fn = built.model, built.loss
    optimizer = _with_loss_scaling(built.optimizer, precision)
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
    (gpuscout.articles)."""
    step_on_batch = train_step_function(tf, built, precision, xla)

    @tf.function  # type: ignore[untyped-decorator]
    def train_step(iterator: Any) -> Any:
        x, y = next(iterator)  # outside the XLA cluster: the iterator op cannot be compiled
        return step_on_batch(x, y)

    iterator = iter(dataset)

    def one_step() -> None:
        train_step(iterator).numpy()
        sync()

    return protocol.run(one_step)


class _FitTimer(keras.callbacks.Callback):  # type: ignore[misc]
    """Times each batch from the end of the previous one, as a user timing fit would, minus
    gpuscout's bookkeeping between the two."""

    def __init__(self, protocol: Protocol, sync: Callable[[], None]) -> None:
        super().__init__()
        self.protocol = protocol
        self.sync = sync
        self.last = 0.0
        self.outcome: Outcome | None = None

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if batch == 0:
            self.last = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if logs and "loss" in logs:
            float(logs["loss"])  # fetch the loss: the step has finished
        self.sync()
        outcome = self.protocol.add(time.perf_counter() - self.last)
        # Restart the clock after the protocol's own bookkeeping, so that it is never counted
        # in a step (in gpuscout's own loop it falls between steps anyway).
        self.last = time.perf_counter()
        if outcome is not None:
            self.outcome = outcome
            self.model.stop_training = True


def fit_loop(
    built: Built,
    dataset: Any,
    precision: str,
    xla: bool,
    protocol: Protocol,
    sync: Callable[[], None],
) -> Outcome:
    """Keras ``model.fit`` on the same model and data, stopped by the protocol."""
    model = built.model
    model.compile(
        optimizer=_with_loss_scaling(built.optimizer, precision),
        loss=built.loss,
        jit_compile=xla,
    )
    timer = _FitTimer(protocol, sync)
    model.fit(dataset, epochs=1, steps_per_epoch=10**9, shuffle=False, verbose=0, callbacks=[timer])
    if timer.outcome is None:  # fit ended on its own (a finite user dataset): stop there
        raise RuntimeError("model.fit stopped before the protocol did")
    return timer.outcome
