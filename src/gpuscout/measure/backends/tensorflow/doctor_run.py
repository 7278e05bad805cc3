"""The doctor's run on TensorFlow, in the measuring child: its target and fixes handed to the
backend-neutral run (``gpuscout.diagnose.ablations``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.diagnose.records import DoctorConfig


def diagnose_here(
    payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """The child's side: measure everything and return the report as JSON."""
    from gpuscout.measure.backends.tensorflow import runtime as tf_runtime

    config = DoctorConfig.model_validate(payload)
    tf = tf_runtime.import_tensorflow()
    from gpuscout.diagnose.ablations import run_ablations
    from gpuscout.diagnose.fixes import TENSORFLOW
    from gpuscout.measure.backends.keras.trial_model import keeping_policy
    from gpuscout.measure.backends.tensorflow.doctor import Target

    return keeping_policy(lambda: run_ablations(Target(tf, config), config, TENSORFLOW, emit))
