"""Counting FLOPs of a model TensorFlow can see but gpuscout has no formula for (user models).

Uses TensorFlow's graph profiler on the frozen forward graph at batch 1: it counts 2 FLOPs per
multiply-add for MatMul/Conv and one per element for element-wise ops. Training is taken as
3 x forward, the same convention as the analytic counts of the built-in workloads.
"""

from __future__ import annotations

from typing import Any


def training_flops_per_sample(tf: Any, model: Any) -> float | None:
    """3 x the forward FLOPs of one sample, or None when the graph cannot be profiled."""
    try:
        from tensorflow.python.framework.convert_to_constants import (
            convert_variables_to_constants_v2,
        )

        specs = [tf.TensorSpec((1, *t.shape[1:]), t.dtype) for t in model.inputs]

        def forward(*xs: Any) -> Any:
            return model(list(xs) if len(xs) > 1 else xs[0], training=False)

        concrete = tf.function(forward).get_concrete_function(*specs)
        frozen = convert_variables_to_constants_v2(concrete)
        options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
        options["output"] = "none"
        info = tf.compat.v1.profiler.profile(
            graph=frozen.graph, run_meta=tf.compat.v1.RunMetadata(), cmd="op", options=options
        )
    except Exception:  # a graph the profiler cannot handle: FLOPs stay unknown, said so
        return None
    total = float(info.total_float_ops)
    return 3.0 * total if total > 0 else None
