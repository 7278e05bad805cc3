"""What a report prints does not depend on the last digits of a floating-point computation.

The calibration fit (scipy's least squares over BLAS) lands on slightly different numbers on
different CPUs: a report once printed '50,708,086,774,116 samples' on one machine and
'...780,726' on another. Every derived quantity is now rendered to three significant figures
(gpuscout.core.units), so moving the fit by a part in a billion — more than the CPUs differ by —
must not change one character of the report; and the formatting helpers are pinned here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.units import fmt_count, fmt_hours, fmt_rate, fmt_seconds, fmt_sig, fmt_usd
from gpuscout.predict import session as prediction
from gpuscout.predict.calibrate import Calibration, calibration_for
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.report import document
from gpuscout.report.markdown import render_markdown
from gpuscout.store import Store
from tests.report.runs import report_runs


def _markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factor: float) -> str:
    def nudged(catalog: Any) -> Calibration:
        fit = calibration_for(catalog)
        return dataclasses.replace(
            fit,
            tensor=tuple(t * factor for t in fit.tensor),
            power_w=fit.power_w * factor,
            stacks={k: v * factor for k, v in fit.stacks.items()},
        )

    monkeypatch.setattr(prediction, "calibration_for", nudged)  # the one every command uses
    with Store(tmp_path / f"{factor}.sqlite") as store:
        runs = store.save_many(report_runs())
    catalog = load_catalog()
    job = resolve_job(JobSpec(workload="resnet50", epochs=90), catalog)  # priced and advised
    report = document.build_report(runs, catalog, job=job)
    return render_markdown(report).replace(report.generated_at, "TIME")


@pytest.mark.parametrize("factor", [1 + 1e-9, 1 - 1e-9])
def test_a_one_in_a_billion_change_of_the_fit_changes_nothing_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factor: float
) -> None:
    exact = _markdown(tmp_path, monkeypatch, 1.0)
    assert _markdown(tmp_path, monkeypatch, factor) == exact
    # ... while the fit does reach what is printed: a 5 % change shows
    assert _markdown(tmp_path, monkeypatch, 1.05) != exact


def test_significant_figures() -> None:
    assert fmt_sig(121.6) == "122" and fmt_sig(1076) == "1,080" and fmt_sig(0.4263) == "0.426"
    assert fmt_sig(999.6) == "1,000" and fmt_sig(3.0) == "3.00" and fmt_sig(0) == "0"
    assert fmt_count(50_708_086_774_116) == "50.7 T" and fmt_count(50_708_086_780_726) == "50.7 T"
    assert fmt_count(14_085_580) == "14.1 M" and fmt_count(999_950) == "1.00 M"
    assert fmt_rate(46_000) == "46,000" and fmt_rate(1029) == "1,030" and fmt_rate(667) == "667"
    assert fmt_usd(727.3) == "$727" and fmt_usd(1076) == "$1,080" and fmt_usd(0.001) == "< $0.01"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5e-4, "500 µs"),
        (0.0009996, "1 ms"),
        (0.012, "12 ms"),
        (0.9996, "1 s"),
        (87, "87 s"),
        (119.96, "2 min 00 s"),
        (163, "2 min 43 s"),
        (1453, "24.2 min"),
        (3923, "65.4 min"),
        (10_790, "3.00 h"),
        (437_760, "122 h"),
    ],
)
def test_durations_keep_three_significant_figures(seconds: float, text: str) -> None:
    assert fmt_seconds(seconds) == text
    assert fmt_hours(seconds / 3600) == text
