"""The checklist on all 16 answers, memory-fit cases, the Pareto front, and the recommender."""

from __future__ import annotations

import itertools
import random

import pytest

from gpuscout.advise import Request, Transformer, advise, memory_fit, quick, transformer_bytes
from gpuscout.advise.checklist import parse_answers
from gpuscout.advise.pareto import front
from gpuscout.catalog import load_catalog
from gpuscout.core.errors import UserError
from gpuscout.predict.calibrate import fit_calibration
from gpuscout.predict.calibration_points import published_points
from gpuscout.predict.profile import cached
from gpuscout.predict.session import Session
from gpuscout.price import Assumptions
from tests.conftest import run_cli


@pytest.mark.parametrize("answers", list(itertools.product([False, True], repeat=4)))
def test_checklist_all_16_combinations(answers: tuple[bool, ...]) -> None:
    result = quick(list(answers))
    assert result.yes_count == sum(answers)
    expected = "A100/H100 (data-center class)" if sum(answers) >= 3 else "RTX 4090"
    assert result.recommendation == expected
    assert any("memory fit" in m for m in result.missed)


def test_answers_parse() -> None:
    assert parse_answers("yes,n,TRUE,0") == [True, False, True, False]
    with pytest.raises(UserError, match="needs 4 answers"):
        parse_answers("yes,no")
    with pytest.raises(UserError, match="'maybe'"):
        parse_answers("yes,no,maybe,no")


def test_lora_7b_fits_a_24gb_card_at_small_batch() -> None:
    model = Transformer(7e9, 32, 4096, 32, seq_len=512, batch=1, mode="lora")
    parts = transformer_bytes(model)
    assert parts["frozen weights (16-bit)"] == 14e9
    result = memory_fit(parts, 24)
    assert result.verdict == "fits" and result.need_gb < 24 * 0.9


def test_qlora_needs_a_quarter_of_the_weight_memory() -> None:
    lora = transformer_bytes(Transformer(7e9, 32, 4096, 32, 512, 1, "lora"))
    qlora = transformer_bytes(Transformer(7e9, 32, 4096, 32, 512, 1, "qlora"))
    assert qlora["frozen weights (4-bit)"] == pytest.approx(
        lora["frozen weights (16-bit)"] / 4 * 1.06
    )


def test_full_training_of_10b_does_not_fit_one_80gb_gpu() -> None:
    model = Transformer(10e9, 40, 5120, 40, seq_len=2048, batch=1, checkpointing=True)
    parts = transformer_bytes(model)
    assert sum(v for k, v in parts.items() if k != "activations") == 16 * 10e9  # 16 B/param
    result = memory_fit(parts, 80)
    assert result.verdict != "fits"
    assert result.verdict.startswith("fits on") and result.gpus_needed == 4  # 160 GB / 4 + act.
    assert memory_fit(parts, 80, shardable=False).verdict == "does not fit"


def test_pareto_front_on_constructed_points() -> None:
    rng = random.Random(7)
    points = [(rng.uniform(1, 100), rng.uniform(1, 100)) for _ in range(200)]
    best = front(points, lambda p: p[0], lambda p: p[1])
    for p in points:  # nothing dominated is on it, nothing undominated is missing
        dominated = any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)
        assert (p in best) != dominated
    assert best == sorted(best)


@pytest.fixture(scope="module")
def request_args():  # type: ignore[no-untyped-def]
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    cat = load_catalog()
    return profile, cat, Session(cat, fit_calibration(published_points(cat)))


def test_recommendation_respects_constraints(request_args) -> None:  # type: ignore[no-untyped-def]
    profile, cat, model = request_args
    samples = 90 * 1_281_167
    req = Request(profile, samples, "images", deadline_hours=48, budget_usd=2000,
                  require=frozenset({"ecc"}), objective="cheapest")  # fmt: skip
    result = advise(req, model, Assumptions())
    assert result.ranked and result.pareto
    costs = [c.total_usd for c in result.ranked]
    assert costs == sorted(costs)
    for c in result.ranked:
        assert c.hours <= 48 and c.total_usd <= 2000 and cat.gpus[c.gpu].ecc
        assert any("deadline" in r for r in c.reasons)
    assert result.rejected.get("lacks ecc", 0) >= 4  # the GeForce cards
    fastest = advise(Request(profile, samples, "images", objective="fastest"), model, Assumptions())
    assert fastest.ranked[0].hours == min(c.hours for c in fastest.ranked)


def test_impossible_constraints_say_why(request_args) -> None:  # type: ignore[no-untyped-def]
    profile, _cat, model = request_args
    req = Request(profile, 90 * 1_281_167, "images", deadline_hours=0.01)
    with pytest.raises(UserError, match="misses the deadline") as late:
        advise(req, model, Assumptions())
    assert late.value.fix is not None and "a later --deadline than 0.01 h" in late.value.fix
    assert "budget" not in late.value.fix  # none was given: nothing to relax there
    with pytest.raises(UserError, match="budget must be positive"):
        advise(Request(profile, 1e6, "images", budget_usd=0), model, Assumptions())
    poor = Request(profile, 90 * 1_281_167, "images", budget_usd=1, owned=True)
    with pytest.raises(UserError, match="over budget") as broke:
        advise(poor, model, Assumptions())
    assert broke.value.fix == "try a larger --budget than $1."  # no deadline, GPUs all allowed


def test_the_checklist_and_the_recommendation_say_why_they_differ() -> None:
    """A 90-epoch ResNet-50: the checklist (1 yes) says RTX 4090, the recommendation ranks by
    time x cost; the report sets the best RTX 4090 option beside advice #1."""
    from gpuscout.advise.checklist import versus_advice

    cat = load_catalog()
    profile = cached("resnet50", {"image_size": 224, "classes": 1000}, 256, "mixed_float16")
    assert profile is not None
    model = Session(cat, fit_calibration(published_points(cat)))
    advice = advise(Request(profile, 90 * 1_281_167, "images"), model, Assumptions())
    first = advice.ranked[0]
    answer = quick([False, True, False, False])
    text = versus_advice(answer, advice.ranked, "balanced")
    if first.gpu == "rtx-4090":
        assert "agree" in text
    else:
        assert "answer different questions" in text and "never prices the job" in text
        assert f"{first.count} x {first.gpu} ({first.provider})" in text
        assert "the best RTX 4090 option, " in text and " x rtx-4090 (" in text
    # A data-center answer is matched by A100/H100 options; an empty ranking says nothing.
    dc = versus_advice(quick([True] * 4), advice.ranked, "fastest")
    assert "A100/H100" in dc and ("agree" in dc or "fastest first" in dc)
    assert versus_advice(answer, [], "balanced") == ""


def test_more_gpus_than_one_machine_holds_run_on_several(request_args) -> None:  # type: ignore[no-untyped-def]
    """16 H100 SXM are two HGX machines of 8 over the network, never one machine of 16: the
    option is predicted as 2x8 (as `predict --count 2x8` does) and the note says so."""
    from gpuscout.predict.scaling import machines_for

    profile, cat, model = request_args
    h100 = cat.gpus["h100-sxm"]
    assert machines_for(h100, 8) == (1, 8) and machines_for(h100, 16) == (2, 8)
    assert machines_for(cat.gpus["rtx-4090"], 12) == (2, 6)
    # the batch per GPU fixed (-b) as predict's is: the layout is what is compared here
    req = Request(profile, 1_281_167, "images", counts=(16,), objective="fastest",
                  fixed_batch=True)  # fmt: skip
    result = advise(req, model, Assumptions())
    option = next(c for c in result.ranked if c.gpu == "h100-sxm")
    rows, _ = model.predict(profile, [h100], [(2, 8)])
    assert model.option(profile, h100, 16).samples_per_second == rows[0].samples_per_second
    assert option.samples_per_second == pytest.approx(rows[0].samples_per_second)
    (note,) = [n for n in result.assumptions if "more GPUs than one machine holds" in n]
    assert "16 as 2 machines x 8: h100-sxm, h200 (an SXM5 board holds 8)" in note


def test_advice_among_the_gpus_a_user_is_choosing_between() -> None:
    """--gpus limits the options to the GPUs named (any catalog spelling), says so, and
    a name the catalog lacks is one line with a suggestion."""
    r = run_cli("advise", "--workload", "resnet50", "--epochs", "10", "--gpus", "4090,3090",
                "--gpus", "h100", "--json", block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    out = r.json()
    assert {c["gpu"] for c in out["ranked"]} <= {"rtx-4090", "rtx-3090", "h100-sxm"}
    assert {c["gpu"] for c in out["ranked"]} >= {"rtx-4090", "rtx-3090"}
    assert any("only h100-sxm, rtx-3090, rtx-4090 (--gpus)" in a for a in out["assumptions"])
    bad = run_cli("advise", "--workload", "resnet50", "--gpus", "5090ti", block_tf=True)
    assert bad.code == 2 and "Did you mean 'rtx-5090'?" in bad.err


def test_the_data_a_rented_machine_copies_in_is_in_its_time_and_cost() -> None:
    """--data-gb: 150 GB at the sourced 5 Gb/s is 4 min more start-up on every rented option,
    billed, in advise and cost alike; owned options copy nothing."""
    job = ("--workload", "resnet50", "--epochs", "1")
    plain = run_cli("cost", *job, "--option", "rtx-4090", "--json", block_tf=True)
    more = run_cli("cost", *job, "--option", "rtx-4090", "--data-gb", "150", "--json",
                   block_tf=True)  # fmt: skip
    assert plain.code == 0 and more.code == 0, more.err
    copy_h = 150 * 8 / 5 / 3600
    (a,), (b,) = plain.json()["options"], more.json()["options"]
    assert b["hours"] - a["hours"] == pytest.approx(copy_h)
    assert b["total_usd"] - a["total_usd"] == pytest.approx(copy_h * a["usd_per_hour"])
    assert "your 150 GB of data copied in at 5 Gb/s" in more.json()["assumptions"]["start-up"]
    assert any(i["name"] == "data_gb" and i["value"] == 150 and i["source"] == "yours"
               for i in more.json()["inputs"])  # fmt: skip
    advised = run_cli("advise", *job, "--gpus", "rtx-4090", "--counts", "1", "--owned",
                      "--data-gb", "150", "--json", block_tf=True)  # fmt: skip
    assert advised.code == 0, advised.err
    by = {c["provider"]: c for c in advised.json()["ranked"]}
    assert by["runpod"]["startup_hours"] == pytest.approx(9 / 60 + copy_h)
    assert by["owned"]["startup_hours"] == 0
