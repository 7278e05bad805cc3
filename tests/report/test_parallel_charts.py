"""The HTML report's charts drawn side by side in forked workers (issue 42: report --html under
3 s for 100 runs) are the charts one process draws: the same SVG, in the same order."""

from __future__ import annotations

import pytest

import gpuscout.report.html as html
from gpuscout.catalog import load_catalog
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.report.document import build_report
from tests.report.runs import report_runs


def test_charts_drawn_in_workers_are_the_charts_drawn_in_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = load_catalog()
    job = resolve_job(JobSpec(workload="resnet50", epochs=90), catalog)
    report = build_report(report_runs(), catalog, job=job)
    report.generated_at = "fixed"
    jobs = len(report.rankings) + 2 + min(len(report.timelines), html.MAX_TIMELINES)
    assert jobs >= 3  # enough charts that workers share them
    pools: list[int] = []

    class Counted(html.ProcessPoolExecutor):  # the forked workers were used, not skipped
        def __init__(self, *args: object, **kwargs: object) -> None:
            pools.append(1)
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(html, "ProcessPoolExecutor", Counted)
    monkeypatch.setattr(html.os, "cpu_count", lambda: 2)  # as on the 2-core machines
    side_by_side = html.render_html(report)
    assert pools == [1]
    monkeypatch.setattr(html, "MAX_WORKERS", 1)
    one_process = html.render_html(report)
    assert side_by_side == one_process and side_by_side.count("<svg") >= 3
