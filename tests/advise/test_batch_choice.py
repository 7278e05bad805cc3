"""Each option's batch per GPU (issue 42, "batch as a decision"): chosen for one global batch
(the largest that fits up to its share, gradient accumulation where the share does not fit),
or the user's -b on every option; said in every row."""

from __future__ import annotations

import math

import pytest

from gpuscout.advise import Request, advise
from gpuscout.advise.batch import accumulated, too_many
from gpuscout.advise.candidates import Candidate
from gpuscout.catalog import load_catalog
from gpuscout.catalog.models import MEMORY_HEADROOM
from gpuscout.predict.batch_size import largest_fitting, memory_at
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.session import Session, session
from gpuscout.price import Assumptions
from tests.conftest import run_in_process

SAMPLES = 1_281_167


@pytest.fixture(scope="module")
def setup() -> tuple[Profile, Session]:
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    return profile, session(load_catalog(), runs=[])


def _one(req: Request, model: Session, gpu: str, count: int) -> Candidate:
    advice = advise(req, model, Assumptions())
    return next(c for c in advice.ranked if c.gpu == gpu and c.count == count)


def test_each_count_splits_the_global_batch_and_is_predicted_at_its_own_batch(
    setup: tuple[Profile, Session],
) -> None:
    """ResNet-50's own batch, 256, is the global batch: 8 RTX 4090 run 32 each, predicted at
    32 (the step re-counted), not 8 x 256 samples a step; the row says so."""
    profile, model = setup
    req = Request(profile, SAMPLES, "images", counts=(1, 2, 8), gpus=frozenset({"rtx-4090"}))
    advice = advise(req, model, Assumptions())
    for c in advice.ranked:
        assert c.batch == 256 // c.count and c.accumulation == 1 and c.global_batch == 256
        assert f"at batch {c.batch} per GPU (global 256)" in c.reasons
    eight = next(c for c in advice.ranked if c.count == 8)
    gpu = model.catalog.gpus["rtx-4090"]
    rows, _ = model.predict(profile.at_batch(32), [gpu], [8])
    assert eight.samples_per_second == pytest.approx(rows[0].samples_per_second, rel=1e-9)
    assert eight.memory_gb == pytest.approx(memory_at(profile, 32) / 1e9)
    fixed = _one(Request(profile, SAMPLES, "images", counts=(8,), gpus=frozenset({"rtx-4090"}),
                         fixed_batch=True), model, "rtx-4090", 8)  # fmt: skip
    assert eight.samples_per_second < fixed.samples_per_second
    assert any(a.startswith("batch: a global batch of 256 samples") for a in advice.assumptions)


def test_a_share_that_does_not_fit_accumulates_gradients(setup: tuple[Profile, Session]) -> None:
    """A global batch of 8,192 on one 24 GB card: the largest batch that fits, micro-batches
    accumulated to the whole share, the memory the micro-batch's."""
    profile, model = setup
    gpu = model.catalog.gpus["rtx-4090"]
    room = gpu.memory_gb * 1e9 * MEMORY_HEADROOM
    req = Request(profile, SAMPLES, "images", counts=(1, 2), gpus=frozenset({"rtx-4090"}),
                  global_batch=8192)  # fmt: skip
    advice = advise(req, model, Assumptions())
    for c in advice.ranked:
        share = 8192 // c.count
        fitting = largest_fitting(profile, room, share)
        assert 0 < fitting < share and memory_at(profile, fitting + 1) > room
        assert c.accumulation == math.ceil(share / fitting) > 1
        assert c.batch == math.ceil(share / c.accumulation) <= fitting
        assert c.batch * c.accumulation * c.count >= 8192 and c.memory_gb * 1e9 <= room
        words = f"at batch {c.batch} per GPU x {c.accumulation} accumulation steps (global "
        assert any(r.startswith(words) for r in c.reasons)
    assert advice.batch_hint is None  # a larger batch does not fit: nothing to offer


def test_a_fixed_batch_per_gpu_is_honoured_on_every_option(setup: tuple[Profile, Session]) -> None:
    """-b: the profile's batch on every count, the global batch growing with the GPUs, as
    before the batch was chosen; a global batch beside it is refused."""
    profile, model = setup
    req = Request(profile, SAMPLES, "images", counts=(1, 4), gpus=frozenset({"rtx-4090"}),
                  fixed_batch=True)  # fmt: skip
    for c in advise(req, model, Assumptions()).ranked:
        assert (c.batch, c.accumulation, c.global_batch) == (256, 1, 256 * c.count)
        assert f"at batch 256 per GPU (global {256 * c.count:,}) (-b)" in c.reasons
    with pytest.raises(Exception, match="contradict"):
        advise(Request(profile, SAMPLES, "images", fixed_batch=True, global_batch=512), model,
               Assumptions())  # fmt: skip


def test_more_gpus_than_samples_in_the_global_batch_are_left_out_and_counted(
    setup: tuple[Profile, Session],
) -> None:
    profile, model = setup
    req = Request(profile, SAMPLES, "images", counts=(1, 8), gpus=frozenset({"rtx-4090"}),
                  global_batch=4)  # fmt: skip
    advice = advise(req, model, Assumptions())
    assert {c.count for c in advice.ranked} == {1}
    assert advice.rejected[too_many(4)] >= 1


def test_accumulating_pays_the_all_reduce_once_per_optimizer_step(
    setup: tuple[Profile, Session],
) -> None:
    profile, model = setup
    (row,), _ = model.predict(profile.at_batch(8), [model.catalog.gpus["rtx-4090"]], [8])
    assert accumulated(row, 1) is row
    more = accumulated(row, 4)
    assert row.scaling_efficiency < more.scaling_efficiency <= 1
    assert more.samples_per_second / row.samples_per_second == pytest.approx(
        more.scaling_efficiency / row.scaling_efficiency
    )


def test_the_launch_bound_hint_compares_with_the_options_own_batch() -> None:
    """The MLP with a global batch of 256 on 8 GPUs runs 32 each: the hint (headline and row)
    is against 32 and says the global batch that gives the larger one."""
    profile = cached("mlp", {}, 32, "mixed_float16")
    assert profile is not None
    req = Request(profile, 50 * 1_200_000, "samples", counts=(8,), global_batch=256,
                  gpus=frozenset({"rtx-4090"}))  # fmt: skip
    advice = advise(req, session(load_catalog(), runs=[]), Assumptions())
    top = advice.ranked[0]
    assert (top.count, top.batch) == (8, 32)
    assert advice.batch_hint is not None and "instead of 32" in advice.batch_hint
    assert "give --global-batch 2048" in advice.batch_hint and top.batch_hint in top.reasons


def test_the_cli_takes_a_global_batch_and_refuses_it_beside_b() -> None:
    job = ("advise", "--workload", "resnet50", "--epochs", "1", "--gpus", "rtx-4090", "--json")
    r = run_in_process(*job, "--global-batch", "512", "--counts", "2")
    assert r.code == 0, r.err
    (first, *_) = r.json()["ranked"]
    assert (first["batch"], first["global_batch"]) == (256, 512)
    assert any("yours, --global-batch" in a for a in r.json()["assumptions"])
    bad = run_in_process(*job, "-b", "64", "--global-batch", "512")
    assert bad.code != 0 and "contradict" in bad.err
