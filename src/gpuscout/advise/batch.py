"""Each option's batch per GPU (issue 42, "batch as a decision").

The default batch decided the answer and nothing said so: holding 32 samples per GPU and adding
GPUs makes 8 GPUs look like 8x the work done per step, when the training recipe fixes the
samples of one optimizer step (the global batch) and more GPUs split it. So, unless the user
fixes the batch per GPU (``-b``, then every option runs it and the global batch grows with the
GPUs), each option of n GPUs runs the largest batch per GPU that fits its memory
(``MEMORY_HEADROOM``, as every fit) up to its share of the global batch, ceil(global / n); where
not even the share fits, the largest that does, with gradient accumulation steps
ceil(share / fitting) (the micro-batch then evened out, ceil(share / steps)). An option with
more GPUs than the global batch has samples has nothing to run and is left out.

Its speed is predicted at that batch through the session every command uses
(``Session.predict(..., batch=B)``); accumulating, the gradients are all-reduced once per
optimizer step, not once per micro-batch (``accumulated``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpuscout.advise.candidates import Request
from gpuscout.catalog import Gpu
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.predict.batch_size import largest_fitting, memory_at
from gpuscout.predict.predictor import Prediction

if TYPE_CHECKING:
    from gpuscout.predict.job import Job

__all__ = [
    "BatchPlan", "accumulated", "batch_note", "batch_plan", "batch_words", "job_batch",
    "too_many",
]  # fmt: skip


@dataclass
class BatchPlan:
    """One GPU's options: count -> (batch per GPU, accumulation steps); the counts with more
    GPUs than samples in the global batch; whether the step fits the GPU at all."""

    per_count: dict[int, tuple[int, int]] = field(default_factory=dict)
    too_many: list[int] = field(default_factory=list)
    fits: bool = True


def batch_plan(req: Request, gpu: Gpu) -> BatchPlan:
    """The batch of each of ``req.counts`` GPUs ``gpu`` (see the module's doc)."""
    profile = req.profile
    room = gpu.memory_gb * 1e9 * MEMORY_HEADROOM
    if req.fixed_batch:
        fits = memory_at(profile, profile.batch) <= room
        return BatchPlan({n: (profile.batch, 1) for n in req.counts}, [], fits)
    total = req.samples_per_step
    plan = BatchPlan()
    for n in req.counts:
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


def too_many(total: int) -> str:
    """The reason an option with more GPUs than samples in the global batch is left out."""
    return f"more GPUs than the {total} samples of the global batch (--global-batch)"


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


def batch_note(req: Request, left_out: int) -> str:
    """How each option's batch was set, and how to change it, in one line."""
    profile = req.profile
    if req.fixed_batch:
        return (
            f"batch: {profile.batch} per GPU on every option (-b, yours), so the global batch "
            f"grows with the GPUs ({profile.batch} x the count); without -b each option's "
            "batch is chosen for one global batch (--global-batch, default the job's own)"
        )
    total = req.samples_per_step
    how = (
        "the step re-counted at it"
        if profile.per_sample is not None
        else f"estimated from the step's split at batch {profile.batch}, the one traced"
    )
    source = req.batch_source or "the job's own batch"
    dropped = (
        f"; {left_out} option{'s' * (left_out > 1)} with more GPUs than {total} samples left out"
        if left_out
        else ""
    )
    return (
        f"batch: a global batch of {total:,} samples per optimizer step ({source}; "
        "--global-batch N changes it, -b B fixes B per GPU on every option instead): each "
        f"option's batch per GPU is the largest that fits {MEMORY_HEADROOM:.0%} of its "
        f"memory up to {total:,} / its GPUs, with gradient accumulation where that share does "
        f"not fit (all-reduced once per optimizer step), its speed predicted at that batch "
        f"({how}) and said in its row{dropped}"
    )


def job_batch(wanted: Mapping[str, Any], job: Job) -> dict[str, Any]:
    """The advice's constraints (``cli.job_args.constraints``) with the job's own global batch
    where the user gave neither -b nor --global-batch (a stored run's over its replicas)."""
    out = dict(wanted)
    if not out.get("fixed_batch") and out.get("global_batch") is None:
        out["global_batch"] = job.global_batch
        out["batch_source"] = job.batch_source
    return out
