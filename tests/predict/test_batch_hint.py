"""A larger batch, said when it would make the job much faster (issue 42, item 2): exactly
where the profile knows how its kernels grow, estimated from the step's split where it does
not, and never past the GPU's memory."""

from __future__ import annotations

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.predict.batch_hint import MOST, MUCH_FASTER, larger_batch
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.session import Session, session


@pytest.fixture(scope="module")
def model() -> Session:
    return session(load_catalog(), runs=[])


def _profile(workload: str, batch: int) -> Profile:
    found = cached(workload, {}, batch, "mixed_float16")
    assert found is not None and found.per_sample is not None
    return found


def test_a_launch_bound_step_gets_a_larger_batch_counted_exactly(model: Session) -> None:
    """The MLP at batch 32 on an RTX 4090 is launch-bound: 8x the batch fits and is predicted
    far faster, from the step re-counted at that batch (the same figure predict gives)."""
    profile = _profile("mlp", 32)
    gpu = model.catalog.gpus["rtx-4090"]
    (base,), _ = model.predict(profile, [gpu], [1])
    hint = larger_batch(model, profile, gpu, base)
    assert hint is not None and hint.batch == 32 * MOST
    (bigger,), _ = model.predict(profile.at_batch(hint.batch), [gpu], [1])
    assert hint.speedup == pytest.approx(bigger.samples_per_second / base.samples_per_second)
    assert hint.speedup >= MUCH_FASTER and "re-counted at batch 256" in hint.how
    words = hint.words("rtx-4090", 32)
    assert "batch 256 per GPU instead of 32" in words and words.endswith("give -b 256")


def test_without_per_sample_growth_the_split_estimates_it_and_errs_slow(model: Session) -> None:
    """A user's model is traced at one batch: the estimate keeps launches and the cost per
    step fixed and grows the rest; beside the exact count it is within reach and not faster
    (a larger GEMM runs at a better share of the peak, which the estimate leaves out)."""
    exact_profile = _profile("resnet50", 16)
    one_batch = exact_profile.model_copy(update={"per_sample": None})
    gpu = model.catalog.gpus["h100-sxm"]
    (base,), _ = model.predict(one_batch, [gpu], [1])
    estimated = larger_batch(model, one_batch, gpu, base)
    exact = larger_batch(model, exact_profile, gpu, base)
    assert estimated is not None and exact is not None and estimated.batch == exact.batch
    assert "estimated from the step's split" in estimated.how
    assert exact.speedup * 0.7 <= estimated.speedup < exact.speedup


def test_no_hint_past_the_memory_or_for_a_step_already_busy(model: Session) -> None:
    """ResNet-50 at batch 256 is neither launch-bound nor small: no larger batch is much
    faster. On a 16 GB T4 nothing above what fits is offered."""
    profile = _profile("resnet50", 256)
    for name in ("rtx-4090", "t4"):
        gpu = model.catalog.gpus[name]
        (base,), _ = model.predict(profile, [gpu], [1])
        hint = larger_batch(model, profile, gpu, base)
        assert hint is None or hint.memory_gb <= gpu.memory_gb * MEMORY_HEADROOM
    gpu = model.catalog.gpus["rtx-4090"]
    (base,), _ = model.predict(profile, [gpu], [1])
    assert larger_batch(model, profile, gpu, base) is None
