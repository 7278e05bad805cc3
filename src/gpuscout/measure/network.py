"""The network a multi-worker run saw: a short all-reduce timed after the run, NCCL's way.

A run's scaling efficiency says *how well* it scaled; the bus bandwidth of its own all-reduce
between the same workers says *why*: with it, the scaling model (``predict/scaling.py``) tells
how long the gradients' all-reduce takes on that network, which the run's rendering shows
beside the measured step. Each backend times its own framework's all-reduce (the one its
gradients take) through :func:`time_allreduce`, after the timed steps, outside their timing,
and the same number of times on every worker, so no worker waits for ever on a collective
another never starts. The buffer is the size of the model's gradients, capped at
:data:`CAP_BYTES` so a large model does not turn a short check into a long one.

Bus bandwidth is NCCL's ``busbw`` (nccl-tests' PERFORMANCE.md): for an all-reduce over n
ranks, ``2 (n-1)/n x bytes / time``: the traffic each rank's link carries in a ring, so the
figure is comparable across rank counts and with the catalog's NCCL figures.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

CAP_BYTES = 64 * 2**20  # 64 MiB: a few ResNet-50s' gradients; a bigger model's are capped
FLOAT_BYTES = 4  # the buffer is float32, as gradients of float32 variables are
WARMUP = 1  # the first all-reduce sets up the collective (and compiles it on JAX): untimed
REPEATS = 5  # timed all-reduces; the median is the run's figure


def buffer_elements(gradient_bytes: int) -> int:
    """float32 elements of the buffer to all-reduce: the gradients' size, capped, at least 1."""
    return max(1, min(gradient_bytes, CAP_BYTES) // FLOAT_BYTES)


def time_allreduce(once: Callable[[], None], clock: Callable[[], float] = time.perf_counter
                   ) -> list[float]:  # fmt: skip
    """Seconds of each of :data:`REPEATS` calls of ``once`` (one all-reduce, waited for),
    after :data:`WARMUP` untimed ones. Every worker must call it, with the same buffer."""
    for _ in range(WARMUP):
        once()
    times = []
    for _ in range(REPEATS):
        t0 = clock()
        once()
        times.append(clock() - t0)
    return times


def bus_bandwidth(nbytes: int, ranks: int, seconds: float) -> float:
    """NCCL's bus bandwidth of an all-reduce of ``nbytes`` over ``ranks`` in ``seconds``, in
    bytes/s: ``2 (ranks-1)/ranks x nbytes / seconds`` (0 for one rank: nothing crosses)."""
    if ranks <= 1 or seconds <= 0:
        return 0.0
    return 2 * (ranks - 1) / ranks * nbytes / seconds


def fields(gradient_bytes: int, elements: int, ranks: int, times: list[float]) -> dict[str, Any]:
    """The :class:`~gpuscout.core.records.Distribution` fields for all-reduces of ``elements``
    float32 values over ``ranks`` replicas, timed ``times``."""
    nbytes = elements * FLOAT_BYTES
    median = statistics.median(times)
    return {
        "gradient_bytes": gradient_bytes,
        "allreduce_bytes": nbytes,
        "allreduce_s": median,
        "allreduce_busbw_gb_per_s": bus_bandwidth(nbytes, ranks, median) / 1e9,
    }
