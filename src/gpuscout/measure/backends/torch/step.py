"""The PyTorch training step: eager Keras 3 on PyTorch, the one ``bench --backend torch`` times.

Its own module because what trains or counts a step on PyTorch shares it: the timed loop
(``backend.py``) and the FLOP count of a user's model (:func:`count_flops`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def train_step(
    torch: Any, built: Any, precision: str, call: Callable[..., Any] | None = None,
    mark: Callable[[str], None] | None = None,
) -> Callable[[Any, Any], Any]:  # fmt: skip
    """The step ``(x, y) -> loss``, run eagerly (one kernel per op, as a plain PyTorch loop
    runs; torch.compile is not used). ``call``: what the forward pass calls instead of the
    model (over workers, its ``DistributedDataParallel`` wrapper, whose backward all-reduces
    the gradients before the optimizer reads them). ``mark``: told "backward" and "optimizer"
    as the step enters each phase (the capture of a live model's step records them apart).

    The same work as the JAX step, written as Keras' own torch trainer writes it: the forward
    pass with ``training=True``, the loss on float32 predictions, ``loss.backward()`` into each
    variable's ``.grad``, then the optimizer's ``apply`` under ``torch.no_grad()``. float16
    scales the loss (LossScaleOptimizer), as the other backends' steps do. The loss comes back
    detached, for the protocol to read once the step's time is taken.
    """
    import keras

    from gpuscout.measure.backends.keras.fit import with_loss_scaling

    model, loss_fn = built.model, built.loss
    optimizer = with_loss_scaling(built.optimizer, precision)
    optimizer.build(model.trainable_variables)
    trainable = list(model.trainable_variables)
    forward = model if call is None else call

    def step(x: Any, y: Any) -> Any:
        pred = forward(x, training=True)
        loss = loss_fn(y, keras.ops.cast(pred, "float32"))
        for v in trainable:
            v.value.grad = None
        if mark is not None:
            mark("backward")
        optimizer.scale_loss(loss).backward()
        if mark is not None:
            mark("optimizer")
        with torch.no_grad():
            optimizer.apply([v.value.grad for v in trainable], trainable)
        return loss.detach()

    return step


def count_flops(torch: Any, step: Callable[[Any, Any], Any], x: Any, y: Any) -> float:
    """The FLOPs of one training step as ``torch.utils.flop_counter.FlopCounterMode`` counts
    them (matmuls, convolutions, attention; 2 per multiply-add), the step run once for it.
    A gradient PyTorch never computes (an input's) is not counted, unlike the analytic
    3 x forward of the built-in workloads."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        step(x, y)
    return float(counter.get_total_flops())
