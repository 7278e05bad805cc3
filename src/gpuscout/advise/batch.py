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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpuscout.advise.candidates import Request
from gpuscout.catalog import Gpu
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.predict.batch_plan import BatchPlan, accumulated, batch_words, plan_batches

if TYPE_CHECKING:
    from gpuscout.predict.job import Job

__all__ = [
    "BatchPlan", "accumulated", "batch_note", "batch_plan", "batch_words", "job_batch",
    "too_many",
]  # fmt: skip


def batch_plan(req: Request, gpu: Gpu) -> BatchPlan:
    """The batch of each of ``req.counts`` GPUs ``gpu`` (see the module's doc)."""
    return plan_batches(req.profile, gpu, req.counts, req.samples_per_step, req.fixed_batch)


def too_many(total: int) -> str:
    """The reason an option with more GPUs than samples in the global batch is left out."""
    return f"more GPUs than the {total} samples of the global batch (--global-batch)"


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
