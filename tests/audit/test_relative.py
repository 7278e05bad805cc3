"""Relative claims ("an RTX 4090 is 1.4x an A100"): parsed as written, judged per setting with
the prediction session's own ratio and the chip-relative band, and refused in one line when
they cannot be read.

No predicted ratio is written down here: the kernel model changes, and each expectation is
the library's own prediction for the same setting (``predict_for``, as ``gpuscout predict``).
"""

from __future__ import annotations

import pytest

from gpuscout.audit.relative import (
    SETTINGS,
    Judged,
    RelativeClaim,
    _overall,
    judge_relative,
    parse_relative,
    ratio_band,
)
from gpuscout.catalog import Catalog, load_catalog
from gpuscout.core.errors import UserError
from gpuscout.predict import uncertainty
from gpuscout.predict.out_of_sample import shipped
from gpuscout.predict.request import PredictRequest, predict_for

CLAIM = RelativeClaim("rtx-4090", 1.4, "a100-40gb", "resnet50", text="rtx-4090=1.4x a100-40gb")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


@pytest.mark.parametrize(
    "text",
    [
        "rtx-4090=1.4x a100-40gb",
        "rtx-4090=1.4\u00d7 a100-40gb",
        "rtx-4090=1.4 a100-40gb",
        " rtx-4090 = 1.4X  a100-40gb ",
        "rtx-4090=1.4xa100-40gb",
        "rtx-4090=1.4*a100-40gb",
        "rtx-4090=x1.4 a100-40gb",
    ],
)
def test_the_ways_a_ratio_is_written_read_the_same(text: str) -> None:
    assert parse_relative(text) == ("rtx-4090", 1.4, "a100-40gb")


def test_names_are_left_for_the_catalog_to_resolve() -> None:
    assert parse_relative("RTX 4090=2.5x A100 40GB") == ("RTX 4090", 2.5, "A100 40GB")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("rtx-4090=fast", "cannot read the claim 'rtx-4090=fast'"),
        ("rtx-4090 a100-40gb", "cannot read the claim"),
        ("=1.4x a100", "cannot read the claim"),
        ("rtx-4090=1.4x", "cannot read the claim"),
        ("rtx-4090=fastx a100", "gives 'fast' as its ratio, not a number"),
        ("rtx-4090=0x a100", "gives the ratio 0:"),
        ("rtx-4090=-1.4x a100", "gives the ratio -1.4:"),
        ("rtx-4090=nanx a100", "gives the ratio nan:"),
        ("rtx-4090=infx a100", "gives the ratio inf:"),
        ("rtx-4090=1e308x a100", "gives the ratio 1e308:"),
    ],
)
def test_unreadable_claims_say_what_and_how(text: str, named: str) -> None:
    with pytest.raises(UserError) as err:
        parse_relative(text)
    assert named in err.value.problem
    assert err.value.fix is not None and "rtx-4090=1.4x a100-40gb" in err.value.fix


def test_each_setting_is_judged_with_predicts_own_ratio(cat: Catalog) -> None:
    """The ratio under each setting is what ``predict`` gives for that setting, to the last
    digit: both go through the one prediction session."""
    verdict = judge_relative(CLAIM, cat)
    assert [j.setting for j in verdict.settings] == [s.name for s in SETTINGS]
    assert (verdict.gpu_id, verdict.reference_id) == ("rtx-4090", "a100-40gb-sxm")
    for j in verdict.settings:
        answer = predict_for(
            PredictRequest(
                gpus="rtx-4090,a100-40gb", workload="resnet50", precision=j.precision, tf32=j.tf32
            )
        )
        mine, theirs = answer.rows
        assert j.ratio == pytest.approx(mine.samples_per_second / theirs.samples_per_second, 1e-12)
        assert j.samples_per_second == pytest.approx(
            {"rtx-4090": mine.samples_per_second, "a100-40gb-sxm": theirs.samples_per_second}
        )
        assert answer.profile.batch == verdict.batch_size


def test_tf32_on_and_off_are_different_settings(cat: Catalog) -> None:
    by = {(j.precision, j.tf32): j for j in judge_relative(CLAIM, cat).settings}
    assert by[("fp32", True)].ratio != by[("fp32", False)].ratio
    assert any("CUDA cores" in n for n in by[("fp32", False)].notes)


def test_the_range_is_the_chip_relative_band_and_says_so(cat: Catalog) -> None:
    verdict = judge_relative(CLAIM, cat)
    low, high = shipped().chip_relative["resnet50"]
    assert (verdict.band["low"], verdict.band["high"]) == (low, high)
    assert "chip-relative band" in str(verdict.band["label"])
    assert any(a.startswith(f"ratio range x{low:.2f} to x{high:.2f}") for a in verdict.assumptions)
    for j in verdict.settings:
        assert j.ratio is not None
        assert (j.low, j.high) == pytest.approx((j.ratio * low, j.ratio * high))


def test_a_workload_without_a_chip_relative_band_takes_the_widest_and_says_so(
    cat: Catalog,
) -> None:
    own = uncertainty.band("gpt2")
    band = ratio_band("gpt2")
    assert (band.low, band.high) == (own.low, own.high)
    assert "no chip-relative band for gpt2" in band.label and "not validated" in band.label


def test_verdicts_follow_the_range(cat: Catalog) -> None:
    """A claim at a setting's predicted ratio holds there; one far outside every range holds
    nowhere; the verdict per setting is the range's, the overall one lists where it holds."""
    first = judge_relative(CLAIM, cat)
    no_tf32 = next(j for j in first.settings if not j.tf32)
    assert no_tf32.ratio is not None
    at = judge_relative(RelativeClaim("rtx-4090", no_tf32.ratio, "a100-40gb", "resnet50"), cat)
    for j in at.settings:
        assert j.low is not None and j.high is not None
        inside = j.low <= no_tf32.ratio <= j.high
        assert j.verdict == ("holds within range" if inside else "outside range")
    assert "fp32 without TF32" in at.holds_under
    assert at.holds_under == [j.setting for j in at.settings if j.verdict == "holds within range"]
    far = judge_relative(RelativeClaim("rtx-4090", 50.0, "a100-40gb", "resnet50"), cat)
    assert far.verdict == "outside range" and far.holds_under == []
    assert "holds in no setting" in far.overall
    assert all("is above the range" in j.reason for j in far.settings)


def _judged(name: str, ratio: float) -> Judged:
    return Judged(name, "", "fp32", True, "outside range", ratio, ratio * 0.9, ratio * 1.1)


@pytest.mark.parametrize(
    ("holds", "verdict", "says"),
    [
        (["b"], "depends on setting", "1.4x can hold only in b (1.40x, range 1.26-1.54x); not in"),
        (["b", "c"], "depends on setting", "can hold in b (1.40x"),
        (["a", "b", "c"], "holds", "can hold in every setting"),
        ([], "outside range", "holds in no setting"),
    ],
)
def test_the_overall_line_says_where_the_claim_can_hold(
    holds: list[str], verdict: str, says: str
) -> None:
    judged = [_judged("a", 0.9), _judged("b", 1.4), _judged("c", 1.3)]
    got, line = _overall(1.4, judged, holds)
    assert got == verdict and says in line
    assert line.endswith("closest prediction: b, 1.40x")


def test_bf16_is_skipped_where_a_gpu_lacks_its_tensor_cores(cat: Catalog) -> None:
    both = judge_relative(RelativeClaim("v100-sxm2-16gb", 2.0, "t4", "resnet50"), cat)
    skipped = [j for j in both.settings if j.verdict == "skipped"]
    assert [j.precision for j in skipped] == ["mixed_bfloat16"]
    assert skipped[0].reason == "skipped: v100-sxm2-16gb and t4 have no BF16 tensor cores"
    assert skipped[0].ratio is None and "mixed_bfloat16" not in both.overall
    one = judge_relative(RelativeClaim("a100-40gb-sxm", 2.0, "t4", "resnet50"), cat)
    assert [j.reason for j in one.settings if j.verdict == "skipped"] == [
        "skipped: t4 has no BF16 tensor cores"
    ]


def test_tf32_on_is_said_to_be_tf32_off_where_neither_gpu_has_it(cat: Catalog) -> None:
    verdict = judge_relative(RelativeClaim("v100-sxm2-16gb", 2.0, "t4", "resnet50"), cat)
    on, off = verdict.settings[:2]
    assert on.ratio == pytest.approx(off.ratio)
    assert "neither GPU has TF32 tensor cores: the same as fp32 without TF32" in on.notes


def test_a_batch_a_gpu_cannot_hold_is_marked(cat: Catalog) -> None:
    verdict = judge_relative(CLAIM, cat)
    for j in verdict.settings:
        rows = predict_for(
            PredictRequest(
                gpus="rtx-4090,a100-40gb", workload="resnet50", precision=j.precision, tf32=j.tf32
            )
        ).rows
        assert j.fits_memory == {r.gpu: r.fits_memory for r in rows}
        for r in rows:
            said = any(n.startswith(f"{r.gpu} does not hold batch") for n in j.notes)
            assert said == (not r.fits_memory)


def test_batch_and_sequence_length_reach_the_prediction(cat: Catalog) -> None:
    claim = RelativeClaim("h100-sxm", 3.0, "a100-80gb-sxm", "bert-base", 16, 384)
    verdict = judge_relative(claim, cat)
    assert verdict.batch_size == 16 and verdict.unit == "sequences"
    answer = predict_for(
        PredictRequest(
            gpus="h100-sxm,a100-80gb-sxm",
            workload="bert-base",
            precision="mixed_float16",
            batch_size=16,
            seq_len=384,
        )
    )
    mixed = next(j for j in verdict.settings if j.precision == "mixed_float16")
    assert mixed.ratio == pytest.approx(
        answer.rows[0].samples_per_second / answer.rows[1].samples_per_second, 1e-12
    )
    assert "sequence length 384" in verdict.assumptions


@pytest.mark.parametrize(
    ("claim", "named"),
    [
        (RelativeClaim("rtx-4090", 1.4, "rtx-4090", "resnet50"), "compares rtx-4090 with itself"),
        (RelativeClaim("rtx-4909", 1.4, "a100-40gb", "resnet50"), "unknown GPU 'rtx-4909'"),
        (RelativeClaim("rtx-4090", 1.4, "a100", "resnet50"), "'a100' is ambiguous"),
        (RelativeClaim("rtx-4090", 1.4, "a100-40gb", "resnet101"), "unknown workload"),
        (RelativeClaim("rtx-4090", 1.4, "a100-40gb", "resnet50", None, 128), "no sequence length"),
        (RelativeClaim("rtx-4090", 1.4, "a100-40gb", "bert-base", None, 77), "no cost profile"),
        (RelativeClaim("rtx-4090", 1.4, "a100-40gb", "bert-base", 10**6), "largest GPU"),
    ],
)
def test_claims_that_cannot_be_judged_say_why(
    cat: Catalog, claim: RelativeClaim, named: str
) -> None:
    with pytest.raises(UserError) as err:
        judge_relative(claim, cat)
    assert named in str(err.value)
