"""The answer in one line (``advise.headline``), on real advice for a real profile and on
hand-made options where a wording depends on one field; and the checklist's LoRA sentence
against ``gpuscout memory`` at the sequence length it states."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpuscout.advise import Request, advise
from gpuscout.advise.checklist import LORA_7B, MISSED, lora_sentence, quick, rule_sentence
from gpuscout.advise.headline import TRIVIAL_HOURS, headline, no_option, reasons
from gpuscout.advise.recommend import Advice, Candidate
from gpuscout.catalog import load_catalog
from gpuscout.core.units import fmt_hours
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.price import Assumptions
from tests.conftest import run_cli


def _advice(**request: Any) -> tuple[Advice, Request]:
    catalog = load_catalog()
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    req = Request(profile=profile, samples=90 * 1_281_167, unit="images", **request)
    return advise(req, session(catalog, runs=[]), Assumptions()), req


@pytest.mark.parametrize("objective", ["cheapest", "fastest", "balanced"])
def test_the_line_names_the_first_option_its_figures_and_why(objective: str) -> None:
    advice, req = _advice(objective=objective, deadline_hours=48.0, budget_usd=2000.0)
    line = headline(advice, req, "90 epochs x 1,281,167 images of resnet50")
    best = advice.ranked[0]
    assert line.startswith("For 90 epochs x 1,281,167 images of resnet50: ")
    assert f"rent {best.count} x {best.gpu} on {best.provider} — " in line
    assert "that meets the 48 h deadline and the $2,000 budget" in line
    said = {"cheapest": "cheapest option", "fastest": "fastest option"}.get(objective)
    if said is not None:  # what decided it is the objective, said as what it is
        assert re.search(rf"; (fastest and )?{said}", line), line
    assert "; nothing else is both faster and cheaper" in line  # the front, in words
    assert "Pareto" not in line and "\n" not in line
    # 90 epochs take hours on any option, so the deadline is met even at the range's slow end
    assert (
        not best.risks
        and "that meets the 48 h deadline and the $2,000 budget even at its range's slow end"
        in line
    )


def test_an_option_whose_range_crosses_the_deadline_is_marked_and_not_the_headline() -> None:
    """The cheapest option with the deadline set between its predicted time and its range's
    slow end: it stays (it meets the deadline as predicted), is marked, and ranks after the
    options that meet the deadline at their slow end; the headline is a safe one and says so."""
    free, _ = _advice(objective="cheapest")
    first = free.ranked[0]
    assert first.fast_hours < first.hours < first.slow_hours
    deadline = (first.hours + first.slow_hours) / 2
    advice, req = _advice(objective="cheapest", deadline_hours=deadline)
    mine = next(c for c in advice.ranked if (c.gpu, c.count, c.provider, c.price_note) ==
                (first.gpu, first.count, first.provider, first.price_note))  # fmt: skip
    assert mine.risks == [
        f"may miss the {deadline:g} h deadline: {fmt_hours(mine.slow_hours)} at its range's "
        "slow end"
    ]
    assert any("may miss" in r for r in mine.reasons)
    best = advice.ranked[0]
    assert not best.risks and best is not mine and best.slow_hours <= deadline
    assert [bool(c.risks) for c in advice.ranked] == sorted(bool(c.risks) for c in advice.ranked)
    line = headline(advice, req, "the job")
    assert f"meets the {deadline:g} h deadline even at its range's slow end" in line


def test_the_headline_says_the_risk_when_no_option_is_safe() -> None:
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    req = Request(profile=profile, samples=1.0, unit="images", deadline_hours=10.0)
    risky = _option(
        "a",
        9.0,
        2.0,
        pareto=True,
        slow_hours=12.0,
        risks=["may miss the 10 h deadline: 12.0 h at its range's slow end"],
    )
    faster = _option(
        "b",
        8.0,
        3.0,
        pareto=True,
        slow_hours=11.0,
        risks=["may miss the 10 h deadline: 11.0 h at its range's slow end"],
    )
    (first, *_) = reasons(Advice([risky, faster], [risky, faster], {}, []), req)
    assert first == (
        "cheapest option that meets the 10 h deadline as predicted; no option is safe at its "
        "range's slow end, and this one may miss the 10 h deadline: 12.0 h at its range's "
        "slow end"
    )


def test_cheapest_names_a_much_faster_option_for_about_the_same_money() -> None:
    """Ranked cheapest, 1 GPU at $7.00 heads; 8 GPUs at $7.50 (not distinguishable on cost)
    finish 8x sooner: said, not hidden. One at twice the money is not offered as the same."""
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    req = Request(profile=profile, samples=1.0, unit="images")
    one = _option("a", 20.0, 7.0, pareto=True)
    eight = Candidate("a", 8, "aws", 2.5, 8.0, 7.5, 800.0, 1.0, pareto=True)
    dear = Candidate("b", 8, "aws", 1.0, 30.0, 14.0, 800.0, 1.0, pareto=True)
    said = reasons(Advice([one, eight, dear], [one, eight, dear], {}, []), req)
    assert said[-1] == (
        "for about the same money ($7.50, not distinguishable on cost) 8 x a (aws) takes "
        "150 min, 8.0x sooner"
    )
    assert reasons(Advice([one, dear], [one, dear], {}, []), req)[-1] == (
        "nothing else is both faster and cheaper"
    )


def _option(gpu: str, hours: float, usd: float, provider: str = "aws", **more: Any) -> Candidate:
    return Candidate(gpu, 1, provider, hours, 1.0, usd, 100.0, 1.0, **more)


def test_balanced_says_what_it_weighed_and_a_short_job_that_the_choice_hardly_matters() -> None:
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    req = Request(profile=profile, samples=1.0, unit="images", objective="balanced")
    middle = _option("a", 2.0, 2.0, pareto=True)
    others = [_option("b", 1.0, 5.0, pareto=True), _option("c", 5.0, 1.0, pareto=True)]
    advice = Advice([middle, *others], [middle, *others], {}, [])
    assert reasons(advice, req)[0] == "best balance of time and cost (lowest hours x dollars)"
    quick_job = _option("a", TRIVIAL_HOURS / 2, 0.01, pareto=True)
    advice = Advice([quick_job], [quick_job], {}, [])
    assert reasons(advice, req) == [
        "fastest and cheapest option",
        "the job takes under a minute, so the choice hardly matters",
    ]


def test_an_owned_option_says_its_purchase_apart_from_the_jobs_share() -> None:
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    req = Request(profile=profile, samples=1.0, unit="images", owned=True, budget_usd=2000.0)
    owned = _option("rtx-4090", 6.0, 4.2, "owned", pareto=True, upfront_usd=1599.0)
    line = headline(Advice([owned], [owned], {}, []), req, "the job")
    assert line.startswith("For the job: buy 1 x rtx-4090 — 6.00 h, $1,599 up front ($4.20 of it")
    assert no_option("the job", "nothing fits").startswith("For the job: no recommendation")


def test_the_checklist_is_one_sentence_a_newcomer_reads() -> None:
    text = rule_sentence(quick([False, True, False, False]))
    assert "four yes/no questions (over 10B parameters?" in text
    assert text.endswith("here 1 of 4 yes, so RTX 4090.")
    assert "x yes" not in text and "000" not in text  # the jargon the issue found


@pytest.mark.parametrize("seq_len", [LORA_7B.seq_len, 2048])
def test_the_lora_sentence_agrees_with_gpuscout_memory(seq_len: int) -> None:
    """The checklist states its sequence length; ``memory`` at that length (and at its
    default, 2048) gives the same need and verdict the sentence says."""
    res = run_cli(
        "memory", "--params", "7e9", "--layers", "32", "--hidden", "4096", "--heads", "32",
        "--mode", "lora", "--seq-len", str(seq_len), "--gpu", "rtx-4090", "--json",
        block_tf=True,
    )  # fmt: skip
    assert res.code == 0, res.err
    shown = res.json()
    need = sum(shown["breakdown_gb"].values())
    (gpu,) = shown["gpus"]
    sentence = lora_sentence()
    assert sentence in MISSED[0]
    if seq_len == LORA_7B.seq_len:
        assert f"at sequence length {seq_len} ({need:.1f} GB" in sentence
        assert gpu["verdict"] == "fits" and " fits a 24 GB RTX 4090" in sentence
    else:
        assert f"at {seq_len} it needs {need:.1f} GB and does not fit on one" in sentence
        assert gpu["verdict"] != "fits"


def test_a_launch_bound_job_is_told_to_raise_the_batch_not_to_rent_eight_gpus() -> None:
    """The MLP at batch 32 is launch-bound: adding GPUs barely helps, a larger batch does.
    The headline names one GPU (the cheapest) and says what batch 256 would give; a job
    that is not launch-bound gets no such line."""
    catalog = load_catalog()
    profile = cached("mlp", {}, 32, "mixed_float16")
    assert profile is not None
    req = Request(profile=profile, samples=50 * 1_200_000, unit="samples", deadline_hours=48.0)
    advice = advise(req, session(catalog, runs=[]), Assumptions())
    line = headline(advice, req, "the job")
    assert advice.ranked[0].count == 1
    assert advice.batch_hint is not None and advice.batch_hint in line
    assert "a larger batch would be much faster: batch 256 per GPU instead of 32" in line
    busy, busy_req = _advice(deadline_hours=48.0)
    assert busy.batch_hint is None and "larger batch" not in headline(busy, busy_req, "x")
