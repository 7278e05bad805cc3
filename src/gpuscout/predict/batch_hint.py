"""Whether a larger batch per GPU would make the same job much faster (issue 42, "batch as a
decision").

A small model at a small batch spends its step launching kernels and paying the framework's
cost per step, which do not grow with the batch; adding GPUs then buys little, while a larger
batch on one GPU would finish the job several times sooner. The batch is also a training
choice (the learning rate follows it), so gpuscout does not change it: it says what a larger
one would give, with the figure, and lets the user decide.

The larger batch is the job's per-GPU batch doubled, up to 8x, the largest that still fits the
GPU's memory (``MEMORY_HEADROOM``, as every fit). Its speed is the step predicted again at that
batch:

- exactly, where the profile knows how each kernel grows with the batch (``Profile.at_batch``:
  the built-in workloads, traced at two batches);
- else estimated from the step's own split (``predict.batch_size``): the compute- and
  memory-bound seconds grow with the batch, the launch-bound ones and the cost per step do not,
  and the activations grow with it while weights, gradients and optimizer state do not. A
  larger GEMM often runs at a better share of the peak, so the estimate errs slow.

Both go through the session every command predicts with (``Session.predict(..., batch=B)``),
the same figures ``advise`` ranks its options at their own batch with. The batch compared
with is the option's own: the job's, or the one ``advise`` chose for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.catalog import Gpu
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.core.units import fmt_gb
from gpuscout.predict.predictor import Prediction
from gpuscout.predict.profile import Profile
from gpuscout.predict.session import Session

__all__ = ["MUCH_FASTER", "BatchHint", "larger_batch"]

# "much faster": a larger batch is worth a line when it cuts the job's time by a third or more
# (a ratio well outside the predictions' own error, x0.84..x1.19 on a ratio of two)
MUCH_FASTER = 1.5
MOST = 8  # at most 8x the job's batch: a hint, not a search for the memory's edge


@dataclass(frozen=True)
class BatchHint:
    batch: int  # per GPU
    speedup: float  # samples/s at ``batch`` over samples/s at the job's batch, on one GPU
    memory_gb: float  # needed at ``batch``
    how: str  # "the step re-counted at batch N" or how it was estimated

    def words(self, gpu: str, batch: int, count: int = 1, fixed: bool = True) -> str:
        """'batch 256 per GPU (fits: 18.2 GB) is predicted 4.3x as fast on rtx-4090 (...)':
        ``fixed``, the batch per GPU is the user's (-b) on every option, and the fix is -b;
        else the fix is the global batch (``--global-batch``) over ``count`` GPUs."""
        total = self.batch * count
        fix = (
            f"if it tolerates {self.batch}, give -b {self.batch}"
            if fixed
            else f"if it tolerates a global batch of {total}"
            + (f" ({self.batch} per GPU on {count} GPUs)" if count > 1 else "")
            + f", give --global-batch {total}"
        )
        return (
            f"a larger batch would be much faster: batch {self.batch} per GPU instead of "
            f"{batch} is predicted {self.speedup:.1f}x as fast on {gpu} (needs "
            f"{fmt_gb(self.memory_gb)}; {self.how}); the batch is your training's choice (its "
            f"learning rate follows it): {fix}"
        )

    def short(self, count: int = 1, fixed: bool = True) -> str:
        """The same, in a row: 'batch 256 per GPU would be 5.9x as fast (-b 256)'."""
        fix = f"-b {self.batch}" if fixed else f"--global-batch {self.batch * count}"
        how = "re-counted" if self.how.startswith("the step re-counted") else "estimated"
        return (
            f"a larger batch would be much faster: batch {self.batch} per GPU is predicted "
            f"{self.speedup:.1f}x as fast ({how}; {fix} if your training tolerates it)"
        )


def larger_batch(
    model: Session, profile: Profile, gpu: Gpu, base: Prediction, batch: int | None = None
) -> BatchHint | None:
    """The largest batch up to ``MOST`` x ``batch`` (doubling) that fits ``gpu`` and runs the
    job at least ``MUCH_FASTER`` x as fast on one GPU, or None. ``batch``: the batch per GPU
    compared with (None: the profile's own); ``base``: the one-GPU prediction at it (from the
    same session)."""
    start = batch or profile.batch
    if profile.kind != "train" or base.samples_per_second <= 0:
        return None
    room = gpu.memory_gb * 1e9 * MEMORY_HEADROOM
    best: BatchHint | None = None
    factor = 2
    while factor <= MOST:
        hint = _at(model, profile, gpu, base, start * factor)
        if hint is None or hint.memory_gb * 1e9 > room:
            break
        best = hint
        factor *= 2
    return best if best is not None and best.speedup >= MUCH_FASTER else None


def _at(
    model: Session, profile: Profile, gpu: Gpu, base: Prediction, batch: int
) -> BatchHint | None:
    if profile.per_sample is None and not base.split:
        return None
    (row,), _ = model.predict(profile, [gpu], [1], batch=batch)
    if row.samples_per_second <= 0:
        return None
    speedup = row.samples_per_second / base.samples_per_second
    if profile.per_sample is not None:
        how = f"the step re-counted at batch {batch}"
    else:
        split = base.split
        fixed = split.get("launch", 0.0) + split.get("step", 0.0)
        now = fixed + split.get("compute", 0.0) + split.get("memory", 0.0)
        how = (f"estimated from the step's split: its {fixed / max(now, 1e-30):.0%} in kernel "
               "launches and the cost per step stay, the rest and the activations grow with "
               "the batch")  # fmt: skip
    return BatchHint(batch, speedup, row.memory_needed_gb, how)
