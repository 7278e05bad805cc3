"""A doctor target's input pipeline made on the host (NumPy batches, prefetch, parallel map,
cache done as ``measure/host_data.py`` does them) for a Keras model on JAX or on PyTorch: the
built-in workload's samples, the user's ``--data``, or synthetic batches shaped from the model.
Each backend passes how a batch reaches its device (``place``); the rest is the same, so it is
written once here, in the Keras code both share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gpuscout.diagnose.records import DoctorConfig
from gpuscout.measure import host_data, user_code
from gpuscout.measure.pipelines import KNOBS, Knobs, Pipeline
from gpuscout.measure.user_spec import parse_function_spec
from gpuscout.workloads import Workload

MODEL_BATCH = 32  # a user's model without data or --batch-size, as on TensorFlow


def host_pipeline(
    config: DoctorConfig, workload: Workload | None, dims: Mapping[str, int], built: Any,
    knobs: Knobs, batch: int, place: Callable[[Any], Any],
) -> Pipeline:  # fmt: skip
    """The pipeline one doctor trial feeds ``built``'s step with, on the host."""
    from gpuscout.measure.backends.keras import user_model as keras_user

    if workload is not None:
        return host_data.builtin(workload, dims, batch, knobs, config.seed, place)
    if config.data:
        spec = parse_function_spec(config.data, "--data")
        takes = user_code.accepted_keywords(spec, "--data", KNOBS)
        given = {k: getattr(knobs, k) for k in KNOBS}

        def make() -> Any:
            return user_code.call_function(spec, "--data", **given)

        return host_data.user(make, config.data, knobs, takes, batch or None, place)
    batch = batch or MODEL_BATCH
    rng = np.random.default_rng(config.seed)
    x, y, notes = keras_user.synthetic_user_batch(built.model, built.loss, 16 * batch, rng)
    pipe = host_data.generated(x[0] if len(x) == 1 else tuple(x), y, batch, knobs, config.seed,
                               place)  # fmt: skip
    pipe.notes += notes
    return pipe
