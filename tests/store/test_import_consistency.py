"""Figures that contradict each other: refused at import (``store/consistency.py``), and a
store that holds such runs anyway (written by an older gpuscout) never makes ``runs compare``
print a non-finite ratio ("infx ... inf% faster", as it did)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.core.comparison import compare
from gpuscout.core.records import Interval, StepTimes
from gpuscout.store import Store
from gpuscout.store.consistency import contradiction
from tests.adversarial.test_store_rows import _run
from tests.conftest import run_in_process


def test_a_measured_run_agrees_with_itself() -> None:
    assert contradiction(_run(0)) is None
    # a fit run's step time is per step (an execution's over its steps): the same relation
    per_step = _run(0).model_copy(update={"env": {"steps_per_execution": 8}})
    assert contradiction(per_step) is None


def test_each_contradiction_is_named() -> None:
    run = _run(0)
    wrong_rate = run.model_copy(
        update={"samples_per_second": Interval(median=1e308, ci_low=None, ci_high=None)}
    )
    assert contradiction(wrong_rate) == (
        "samples_per_second",
        "median 1e+308 samples/s contradicts batch 32 over the median step of 0.032 s "
        "(1000 samples/s, 5% allowed)",
    )
    too_many = run.model_copy(update={"measured_steps": 1_000_000})
    assert contradiction(too_many) is not None and contradiction(too_many)[0] == "measured_steps"  # type: ignore[index]
    no_times = too_many.model_copy(update={"step_times_s": []})
    assert contradiction(no_times) is None  # no step times kept: nothing to count against
    inference = wrong_rate.model_copy(update={"mode": "inference"})
    assert contradiction(inference) is None  # requests, not steps: its own relation


def _bogus_pair(db: Path) -> None:
    fast = _run(1).model_copy(
        update={
            "samples_per_second": Interval(median=1e308, ci_low=1e307, ci_high=1.7e308),
            "step_time_s": StepTimes(median=0.032, p5=0.031, p95=0.034, mean=0.0322),
        }
    )
    slow = _run(0).model_copy(
        update={"samples_per_second": Interval(median=0.01, ci_low=0.009, ci_high=0.011)}
    )
    with Store(db, announce=False) as store:
        store.save_many([slow, fast])  # 1e308 over 0.01 overflows


def test_compare_never_prints_a_non_finite_ratio(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    _bogus_pair(db)
    with Store(db, readonly=True) as store:
        a, b = store.get(1), store.get(2)
    assert compare(a, b).speedup is None and compare(a, b).out_of_range
    assert compare(b, a).speedup is not None  # 1e-310: finite, tiny, shown as is
    r = run_in_process("runs", "compare", "1", "2", "--db", str(db))
    assert r.code == 0, r.err
    assert "inf" not in r.out.lower().replace("info", "")
    assert "is no finite number" in r.out and "not ranked" in r.out
    j = run_in_process("runs", "compare", "1", "2", "--db", str(db), "--json")
    assert j.code == 0 and '"speedup": null' in j.out and "Infinity" not in j.out


@pytest.mark.parametrize("mfu", [1.5, 2.0])
def test_mfu_above_one_is_kept_up_to_twice_the_peak(mfu: float) -> None:
    assert contradiction(_run(0).model_copy(update={"mfu": mfu})) is None
