"""Which options the model can tell apart: pure arithmetic on predicted speeds."""

from __future__ import annotations

import pytest

from gpuscout.predict.ranking import groups, threshold, tie_notes, tied_with_next


def test_the_threshold_is_the_error_of_a_ratio_of_two_predictions() -> None:
    assert threshold(0.0) == 1.0
    assert threshold(0.10) == pytest.approx(1.10**2**0.5)
    assert threshold(-1.0) == 1.0  # a nonsense error is clamped, never a threshold below 1


def test_groups_never_chain_options_far_apart() -> None:
    """A ladder of options each 10 % apart, with a 15 % threshold: neighbours are all tied, but
    a group holds only options within the threshold of its fastest."""
    ladder = [(f"g{i}", 1000 / 1.1**i) for i in range(6)]
    limit = threshold(0.10)  # 1.144
    assert tied_with_next(ladder, 0.10) == {f"g{i}" for i in range(5)}
    runs = groups(ladder, 0.10)
    assert runs == [["g0", "g1"], ["g2", "g3"], ["g4", "g5"]]
    speed = dict(ladder)
    for run in runs:
        assert speed[run[0]] / speed[run[-1]] < limit
    (note,) = tie_notes(ladder, 0.10)
    assert "g0 ~ g1; g2 ~ g3; g4 ~ g5" in note


def test_options_far_apart_are_ranked() -> None:
    assert groups([("a", 300.0), ("b", 100.0)], 0.25) == []
    assert tie_notes([("a", 300.0), ("b", 100.0)], 0.25) == []
