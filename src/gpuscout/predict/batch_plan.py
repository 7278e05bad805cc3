"""Each option's batch per GPU for one global batch (issue 42's "batch as a decision"), for every
command that prices options: ``advise`` and ``cost`` split the same global batch the same way.

The training recipe fixes the samples of one optimizer step (the global batch); n GPUs split
it. Each of n GPUs runs the largest batch that fits its memory (``MEMORY_HEADROOM``, as every
fit) up to its share, ceil(global / n); where not even the share fits, the largest that does,
with gradient accumulation steps ceil(share / fitting), the micro-batch then evened out. More
GPUs than the global batch has samples have nothing to run. Accumulating, the gradients are
all-reduced once per optimizer step, not once per micro-batch (:func:`accumulated`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from gpuscout.catalog import Gpu
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.predict.batch_size import largest_fitting, memory_at
from gpuscout.predict.predictor import Prediction
from gpuscout.predict.profile import Profile


@dataclass
class BatchPlan:
    """One GPU's options: count -> (batch per GPU, accumulation steps); the counts with more
    GPUs than samples in the global batch; whether the step fits the GPU at all."""

    per_count: dict[int, tuple[int, int]] = field(default_factory=dict)
    too_many: list[int] = field(default_factory=list)
    fits: bool = True


def plan_batches(
    profile: Profile, gpu: Gpu, counts: Iterable[int], global_batch: int | None, fixed: bool
) -> BatchPlan:
    """The batch of each of ``counts`` GPUs ``gpu`` training ``global_batch`` samples a step
    (None: the profile's batch); ``fixed``: the profile's batch per GPU on every count (-b)."""
    room = gpu.memory_gb * 1e9 * MEMORY_HEADROOM
    if fixed:
        fits = memory_at(profile, profile.batch) <= room
        return BatchPlan({n: (profile.batch, 1) for n in counts}, [], fits)
    total = global_batch or profile.batch
    plan = BatchPlan()
    for n in counts:
        if n > total:
            plan.too_many.append(n)
            continue
        share = math.ceil(total / n)
        fitting = largest_fitting(profile, room, share)
        if fitting == 0:  # not even one sample: no count of this GPU runs the step
            return BatchPlan(fits=False)
        steps = math.ceil(share / fitting)
        plan.per_count[n] = (math.ceil(share / steps), steps)
    return plan


def accumulated(row: Prediction, steps: int) -> Prediction:
    """``row`` (n GPUs, each at the micro-batch) with ``steps`` micro-batches accumulated per
    optimizer step: the work grows ``steps`` x, the all-reduce (what its scaling efficiency
    loses) is paid once. One GPU, or one step, is ``row`` itself."""
    if steps == 1 or row.count == 1 or row.scaling_efficiency <= 0:
        return row
    lost = 1 / row.scaling_efficiency  # a step's time over its compute: 1 + the all-reduce's
    efficiency = steps / (steps + lost - 1)
    factor = efficiency / row.scaling_efficiency
    return replace(
        row,
        samples_per_second=row.samples_per_second * factor,
        low=row.low * factor,
        high=row.high * factor,
        scaling_efficiency=efficiency,
    )


def batch_words(batch: int, steps: int, total: int) -> str:
    """'batch 32 per GPU (global 256)', 'batch 16 per GPU x 2 accumulation steps (global
    256)'."""
    accumulate = f" x {steps} accumulation steps" if steps > 1 else ""
    return f"batch {batch} per GPU{accumulate} (global {total:,})"


__all__ = ["BatchPlan", "accumulated", "batch_words", "plan_batches"]
