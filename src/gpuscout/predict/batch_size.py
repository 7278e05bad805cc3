"""A training step at another batch per GPU than it was traced at, and the largest batch that
fits a GPU (issue 42, "batch as a decision").

Every size in a step is affine in the batch, so a built-in workload's profile, traced at two
batches, is re-counted exactly at any batch (``Profile.at_batch``). A user's model is traced at
one batch only; its step at another batch is estimated from its split (``Prediction.split``):
the compute- and memory-bound seconds grow with the batch, the launch-bound ones and the
framework's cost per step do not, and the activations grow with it while weights, gradients
and optimizer state do not. A larger GEMM often runs at a better share of the peak, so the
estimate errs slow. ``Session.predict(..., batch=B)`` uses the exact count where there is one
and this estimate where there is not; memory is fitted as every fit is (``MEMORY_HEADROOM``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscout.predict.profile import Profile
    from gpuscout.predict.roofline import StepEstimate

__all__ = ["ESTIMATED", "grown_step", "largest_fitting", "memory_at", "memory_profile"]

ESTIMATED = (
    "estimated from the step's split: its kernel launches and cost per step stay, the rest "
    "and the activations grow with the batch"
)


def memory_profile(profile: Profile, batch: int) -> Profile:
    """``profile`` with the activations it keeps at ``batch``: exact where it knows their
    growth per sample, else in proportion to the batch. For memory only (its kernels are not
    re-counted)."""
    if batch == profile.batch:
        return profile
    grow = profile.per_sample
    if grow is not None:
        step = batch - profile.batch
        saved = profile.saved_activation_bytes + grow.saved_activation_bytes * step
        again = profile.recomputed_activation_bytes + grow.recomputed_activation_bytes * step
    else:
        ratio = batch / profile.batch
        saved = profile.saved_activation_bytes * ratio
        again = profile.recomputed_activation_bytes * ratio
    return profile.model_copy(update={
        "batch": batch,
        "saved_activation_bytes": max(0.0, saved),
        "recomputed_activation_bytes": max(0.0, again),
    })  # fmt: skip


def memory_at(profile: Profile, batch: int) -> float:
    """Bytes the step needs on one GPU at ``batch`` (``predictor.memory_needed``)."""
    from gpuscout.predict.predictor import memory_needed  # predictor imports this module

    return memory_needed(memory_profile(profile, batch))


def largest_fitting(profile: Profile, room: float, most: int) -> int:
    """The largest batch up to ``most`` whose step needs at most ``room`` bytes; 0 where not
    even a batch of 1 fits. Memory is affine in the batch, so it is solved, then checked."""
    if most < 1 or memory_at(profile, 1) > room:
        return 0
    if memory_at(profile, most) <= room:
        return most
    one, two = memory_at(profile, 1), memory_at(profile, 2)
    per = two - one
    batch = most if per <= 0 else max(1, min(most, math.floor((room - one) / per) + 1))
    while batch > 1 and memory_at(profile, batch) > room:  # rounding, never past the room
        batch -= 1
    while batch < most and memory_at(profile, batch + 1) <= room:
        batch += 1
    return batch


def grown_step(est: StepEstimate, grow: float) -> StepEstimate:
    """One GPU's step at ``grow`` x the batch it was counted at, estimated from its split
    (``ESTIMATED``); its per-class figures are left out (they were counted at the other
    batch)."""
    if grow == 1:
        return est
    split = est.split
    fixed = split.get("launch", 0.0) + split.get("step", 0.0)
    scaled = split.get("compute", 0.0) + split.get("memory", 0.0)
    grown = {k: v * grow if k in ("compute", "memory") else v for k, v in split.items()}
    return replace(est, seconds=fixed + scaled * grow, split=grown, classes={})
