"""Ties judged by the score that ranks (issue 30): the speed error propagated into hours
(once), cost (once: hours x a certain price) and 'balanced' (hours x cost: twice), so no
"not distinguishable" pair differs by more than the uncertainty the note states."""

from __future__ import annotations

import itertools
import re

import pytest

from gpuscout.advise import Request, advise
from gpuscout.advise.recommend import Advice, Candidate
from gpuscout.advise.ties import Objective, limit, tie_note, top_ties, value
from gpuscout.catalog import load_catalog
from gpuscout.predict import ranking
from gpuscout.predict.calibrate import fit_calibration
from gpuscout.predict.calibration_points import published_points
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.session import Session
from gpuscout.predict.uncertainty import relative_error
from gpuscout.price import Assumptions

OBJECTIVES: tuple[Objective, ...] = ("fastest", "cheapest", "balanced")
NOTE = re.compile(
    r"not distinguishable at the top: (?P<names>.+?) are within x(?P<limit>[\d.]+) of each "
    r"other on '(?P<objective>\w+)'"
)
ERROR = 0.15


@pytest.fixture(scope="module")
def model() -> Session:
    cat = load_catalog()
    return Session(cat, fit_calibration(published_points(cat)))


def _profile(workload: str) -> Profile:
    found = {"resnet50": cached("resnet50", {}, 256, "mixed_float16"),
             "mlp": cached("mlp", {}, 256, "mixed_float16")}[workload]  # fmt: skip
    assert found is not None
    return found


def _tied(advice: Advice) -> tuple[list[Candidate], float] | None:
    notes = [m for a in advice.assumptions if (m := NOTE.search(a))]
    if not notes:
        return None
    (m,) = notes
    by = {c.label: c for c in advice.ranked}
    names = re.findall(r"\d+ x \S+ \([^)]*\)", m.group("names"))  # a label has ", used"
    return [by[n] for n in names], float(m.group("limit"))


def _option(gpu: str, hours: float, usd: float) -> Candidate:
    return Candidate(gpu, 8, "cloud", hours, usd / hours, usd, 1.0 / hours, 1.0)


def test_the_threshold_is_raised_to_the_objectives_power_of_speed() -> None:
    speed = ranking.threshold(ERROR)
    assert limit("fastest", ERROR) == pytest.approx(speed)
    assert limit("cheapest", ERROR) == pytest.approx(speed)
    assert limit("balanced", ERROR) == pytest.approx(speed**2)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize(("workload", "owned"), [("resnet50", False), ("resnet50", True),
                                                 ("mlp", False)])  # fmt: skip
def test_no_tied_pair_differs_by_more_than_the_stated_uncertainty(
    model: Session, objective: Objective, workload: str, owned: bool
) -> None:
    req = Request(_profile(workload), 90 * 1_281_167, "samples", owned=owned, objective=objective)
    advice = advise(req, model, Assumptions())
    relative = relative_error()
    most = limit(objective, relative)
    figure = value(objective, advice.ranked)
    found = _tied(advice)
    if found is not None:
        tied, stated = found
        assert stated == pytest.approx(most, abs=0.005)
        for a, b in itertools.combinations(tied, 2):
            ratio = max(figure(a), figure(b)) / min(figure(a), figure(b))
            assert ratio < most, (a, b, ratio, most)
    # and none is missed: every other GPU in the top 12 within it of the first is named (the
    # first's own GPU at another count is not: the speed error cancels between them)
    named = {c.gpu for c in (found[0] if found else [])}
    first = advice.ranked[0]
    assert first.gpu not in {c.gpu for c in (found[0][1:] if found else [])}
    for c in advice.ranked[1:12]:
        if c.gpu != first.gpu and figure(c) / figure(first) < most:
            assert c.gpu in named


def test_eight_rtx_4090_and_eight_b200_are_told_apart_by_time_and_by_cost(
    model: Session,
) -> None:
    """The issue's pair: on 'fastest' and 'cheapest' they are far apart and never tied. On
    'balanced' (hours x cost) they tie exactly when their scores are within its uncertainty,
    and the note then says they trade time for money."""
    pair = {("rtx-4090", 8, "runpod"), ("b200", 8, "runpod")}
    for objective in OBJECTIVES:
        req = Request(_profile("resnet50"), 90 * 1_281_167, "images", counts=(8,),
                      objective=objective)  # fmt: skip
        advice = advise(req, model, Assumptions())
        figure = value(objective, advice.ranked)
        a, b = (c for c in advice.ranked if (c.gpu, c.count, c.provider) in pair)
        ratio = max(figure(a), figure(b)) / min(figure(a), figure(b))
        most = limit(objective, relative_error())
        found = _tied(advice)
        both = found is not None and {id(a), id(b)} <= {id(c) for c in found[0]}
        if objective != "balanced":
            assert ratio > most and not both
        else:
            first = advice.ranked[0]
            near = all(figure(c) / figure(first) < most for c in (a, b))
            assert both == near
            if both:
                assert any("They trade time for money" in n for n in advice.assumptions)


def test_options_apart_in_time_and_cost_by_objective() -> None:
    """The issue's figures: 3.8x apart in time and 4.6x in cost. Not a tie on time, not on
    cost; on 'balanced' their scores are 1.2x apart, within its x1.48: a trade-off, said."""
    fast = _option("b200", 1.0, 46.0)
    slow = _option("rtx-4090", 3.8, 10.0)
    others = [_option("h100", 2.0, 40.0)]
    for objective in ("fastest", "cheapest"):
        ranked = sorted([fast, slow, *others], key=value(objective, [fast, slow, *others]))
        assert not ({"b200", "rtx-4090"} <= {c.gpu for c in top_ties(ranked, objective, ERROR)})
    ranked = sorted([fast, slow], key=value("balanced", [fast, slow]))
    assert {c.gpu for c in top_ties(ranked, "balanced", ERROR)} == {"b200", "rtx-4090"}
    (note,) = tie_note(ranked, "balanced", ERROR)
    assert "within x1.48" in note and "speed error twice" in note
    assert "8 x b200 (cloud) is 3.8x faster, 8 x rtx-4090 (cloud) 4.6x cheaper" in note
    # 1.3x apart on 'balanced': the old speed threshold (x1.22) ranked them, wrongly
    near = [_option("a", 1.0, 10.0), _option("b", 1.0, 13.0)]
    assert len(top_ties(near, "balanced", ERROR)) == 2
    assert top_ties(near, "cheapest", ERROR) == []
