"""Synthetic data for the built-in workloads, in NumPy: every measuring backend feeds the same
random samples (TensorFlow through tf.data, JAX as device arrays)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuscout.workloads import Dims, Workload


def arrays(workload: Workload, dims: Dims, n: int, seed: int) -> tuple[Any, Any]:
    """``n`` random samples and labels shaped and typed as the workload's inputs.

    A causal language model's labels are its inputs shifted by one position (each position's
    label is the token that follows it), cut from one random sequence a token longer: the
    next-token objective it trains on, not unrelated noise.
    """
    rng = np.random.default_rng(seed)
    shape = (n, *workload.input_shape(dims))
    if workload.task == "causal-lm":
        tokens = rng.integers(0, dims["vocab"], size=(n, shape[1] + 1))
        return tokens[:, :-1].astype(workload.input_dtype), tokens[:, 1:].astype("int32")
    if workload.input_dtype.startswith("int"):
        x = rng.integers(0, dims["vocab"], size=shape).astype(workload.input_dtype)
    else:
        x = rng.random(shape, dtype=np.float32)
    y = rng.integers(0, dims["classes"], size=(n, *workload.label_shape)).astype("int32")
    return x, y
