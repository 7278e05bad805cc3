"""Keras' ``model.fit`` timed by gpuscout's protocol, on any Keras 3 backend.

The model, loss and optimizer are the ones the backend's own loop trains; a callback hands the
wall time of each batch to the :class:`~gpuscout.measure.protocol.Protocol` and stops
``fit`` when the protocol has enough. Each batch is synchronised before its time is taken: the
loss is fetched to the host (on JAX, one jitted step returns the loss with the updated state,
so the loss is ready only when the whole step is), then the backend's ``sync``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import keras

from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.protocol import Outcome, Protocol


def with_loss_scaling(optimizer: Any, precision: str) -> Any:
    """float16 gradients underflow without loss scaling; bfloat16 and float32 need none."""
    if precision == "mixed_float16" and not isinstance(
        optimizer, keras.optimizers.LossScaleOptimizer
    ):
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


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
        loss = float(logs["loss"]) if logs and "loss" in logs else None  # the step has finished
        self.sync()
        took = time.perf_counter() - self.last
        self.protocol.observe_loss(loss)  # fit's running mean: NaN and divergence show in it
        outcome = self.protocol.add(took)
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
        optimizer=with_loss_scaling(built.optimizer, precision),
        loss=built.loss,
        jit_compile=xla,
    )
    timer = _FitTimer(protocol, sync)
    model.fit(dataset, epochs=1, steps_per_epoch=10**9, shuffle=False, verbose=0, callbacks=[timer])
    if timer.outcome is None:  # fit ended on its own (a finite user dataset): stop there
        raise RuntimeError("model.fit stopped before the protocol did")
    return timer.outcome
