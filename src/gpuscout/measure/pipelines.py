"""What every backend's input pipelines share: the fixes doctor tries on them, what a built
pipeline says about itself, and the built-in workloads' data (generated samples held in memory,
and the ``input-bound-demo``'s deliberately slow per-sample Python preprocessing).

TensorFlow builds these as tf.data (``backends/tensorflow/data.py``); JAX, which has no input
pipeline of its own, as NumPy batches made on the host (:mod:`gpuscout.measure.host_data`).
Both run the same samples through the same preprocessing, so their diagnoses compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscout.core.errors import UserError
from gpuscout.workloads import Dims, Workload

KNOBS = ("prefetch", "parallel", "cache")  # the keyword arguments a --data function may take
IN_MEMORY_BYTES = 256 * 2**20  # generated data kept in memory for a built-in workload


@dataclass(frozen=True)
class Knobs:
    """The pipeline fixes: prefetch the next batches, map in parallel, cache the result."""

    prefetch: bool = False
    parallel: bool = False
    cache: bool = False


@dataclass
class Pipeline:
    """A built pipeline and what it showed: ``dataset`` is the backend's (a tf.data.Dataset,
    or a re-iterable of NumPy batches); ``no_cache`` and ``no_parallel`` say why that fix
    cannot help or be applied, if so."""

    dataset: Any
    batch_size: int
    notes: list[str]
    has_map: bool  # a per-element map that parallel calls could speed up
    finite: bool
    steps_per_epoch: int | None = None
    no_cache: str | None = None
    no_parallel: str | None = None


def in_memory_samples(workload: Workload, dims: Dims, batch: int) -> int:
    """How many generated samples a built-in workload keeps in memory: an epoch, at most
    :data:`IN_MEMORY_BYTES`, a whole number of batches and at least one."""
    per_sample = int(np.prod(workload.input_shape(dims))) * 4
    return max(batch, min(workload.epoch_samples, IN_MEMORY_BYTES // per_sample) // batch * batch)


def demo_preprocess(sample: np.ndarray, work: int) -> np.ndarray:
    """The input-bound demo's per-sample preprocessing, in Python, as decoding and augmenting
    records in Python is: ``work`` rounds of tanh + sort, then normalised."""
    out = sample
    for _ in range(work):
        out = np.sort(np.tanh(out * 1.5 + 0.1)).astype(np.float32)
    return np.asarray((out - out.mean()) / (out.std() + 1e-6), dtype=np.float32)


def check_demo_batch(workload: Workload, dims: Dims, batch: int) -> None:
    """The input-bound demo's epoch is its ``samples``, batched without a remainder: a (global)
    batch larger than that has no batch to give, and its loop would wait for ever."""
    if workload.has_pipeline and batch > dims["samples"]:
        raise UserError(
            f"batch {batch:,} is larger than the {dims['samples']:,} samples of "
            f"{workload.name}'s epoch, so it never makes a batch.",
            f"pass a smaller --batch-size: the whole step's batch (over all replicas) may be at "
            f"most {dims['samples']:,}.",
        )


def demo_note(n: int, work: int, how: str) -> str:
    return (
        f"data: the input-bound demo, {n:,} samples each preprocessed in Python ({how}: {work} "
        "rounds of tanh + sort + normalise) on every epoch"
    )
