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
from typing import TYPE_CHECKING

from gpuscout.predict.predictor import memory_needed
from gpuscout.predict.profile import memory_profile
from gpuscout.predict.roofline import ESTIMATED, grown_step

if TYPE_CHECKING:
    from gpuscout.predict.profile import Profile

__all__ = ["ESTIMATED", "grown_step", "largest_fitting", "memory_at", "memory_profile"]


def memory_at(profile: Profile, batch: int) -> float:
    """Bytes the step needs on one GPU at ``batch`` (``predictor.memory_needed``)."""
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
