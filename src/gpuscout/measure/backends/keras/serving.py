"""The model an inference run serves and the inputs of each batch, on any Keras 3 backend: a
built-in workload's model, or the user's (random inputs shaped and typed as its own)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscout.measure import environment
from gpuscout.measure.synthetic import arrays
from gpuscout.measure.user_spec import ModelSpec
from gpuscout.workloads import Workload


@dataclass(frozen=True)
class ServedModel:
    model: Any  # keras.Model
    inputs: Callable[[int], Any]  # batch -> one batch of inputs (arrays)
    workload_hash: str
    note: str


def load_for_serving(
    workload: Workload | None, model_spec: ModelSpec | None, dims: Mapping[str, int],
    seed: int, model_text: str = "",
) -> ServedModel:  # fmt: skip
    """Build the model (under the global Keras policy and device scope the caller set)."""
    if model_spec is not None:
        from gpuscout.measure.backends.keras import user_model as keras_user

        model = keras_user.load_model(model_spec)
        loss = keras_user.prepare_user_model(model)[0].loss
        rng = np.random.default_rng(seed)

        def user_inputs(batch: int) -> Any:
            x, _, _ = keras_user.synthetic_user_batch(model, loss, batch, rng)
            return x[0] if len(x) == 1 else list(x)

        return ServedModel(
            model, user_inputs, environment.hash_parts(model_spec.path.read_bytes(), model_text),
            "inputs: random, shaped and typed as the model's inputs",
        )  # fmt: skip
    assert workload is not None
    from gpuscout.measure.backends.keras.models import BUILDERS

    resolved = workload.resolve(dict(dims))
    builder = BUILDERS[workload.name]

    def inputs(batch: int) -> Any:
        return arrays(workload, resolved, batch, seed)[0]

    digest = environment.hash_parts(
        workload.name, repr(sorted(resolved.items())), inspect.getsource(builder)
    )
    return ServedModel(builder(resolved).model, inputs, digest,
                       "inputs: random, shaped and typed as the workload's")  # fmt: skip
