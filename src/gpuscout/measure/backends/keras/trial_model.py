"""What both backends' doctors do with Keras: build a trial's model afresh under its precision
policy, and leave the caller's global policy as it was."""

from __future__ import annotations

import gc
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import keras

from gpuscout.measure.backends.keras import user_model as keras_user
from gpuscout.measure.backends.keras.models import BUILDERS, Built


def fresh_model(
    target: Any, precision: str, seed: Callable[[int], None], on_device: AbstractContextManager[Any]
) -> Built:
    """``target``'s model (a built-in workload's, or the user's), built afresh: a precision
    policy applies only when layers are built. ``seed`` seeds Keras (each backend its way);
    the user's model's notes are added to ``target.notes`` once."""
    keras.backend.clear_session()
    gc.collect()
    seed(target.config.seed)
    keras.mixed_precision.set_global_policy("float32" if precision == "fp32" else precision)
    with on_device:
        if target.workload is not None:
            return BUILDERS[target.workload.name](target.dims)
        built, notes = keras_user.prepare_user_model(keras_user.load_model(target.spec))
        target.notes += [n for n in notes if n not in target.notes]
        return built


def keeping_policy(run: Callable[[], Any]) -> dict[str, Any]:
    """``run()``'s report as JSON, the global Keras precision policy restored afterwards."""
    previous = keras.mixed_precision.global_policy()
    try:
        return run().model_dump(mode="json")  # type: ignore[no-any-return]
    finally:
        keras.mixed_precision.set_global_policy(previous)
