"""The report as one self-contained HTML file: styles inline, charts inline SVG, no script."""

from __future__ import annotations

import multiprocessing as mp
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from importlib.metadata import version
from typing import Any

from gpuscout.core.limits import usable_cores
from gpuscout.report.charts import cost_chart, ranking_chart, scaling_chart, timeline_chart
from gpuscout.report.document import Report
from gpuscout.report.templating import html_environment

TOP = 10  # options shown in the advice table
MAX_TIMELINES = 6  # the latest runs' timelines; a report on hundreds of runs stays readable
# A summarised report (a store beyond DETAIL_LIMIT runs) draws fewer: each chart costs a second
# of layout, and a team's store is read for its tables, not for one run's clocks.
MAX_TIMELINES_SUMMARISED = 2
MAX_WORKERS = 4  # processes drawing charts side by side, at most (each holds a figure)


def render_html(report: Report) -> str:
    timelines = MAX_TIMELINES_SUMMARISED if report.summary else MAX_TIMELINES
    jobs: list[tuple[Callable[[Any], str], Any]] = [(ranking_chart, r) for r in report.rankings]
    jobs += [(cost_chart, report.advice)] if report.advice else []
    jobs += [(scaling_chart, report.curves)] if report.curves else []
    jobs += [(timeline_chart, t) for t in report.timelines[-timelines:]]
    drawn = iter(_draw(jobs))
    charts = {
        "ranking": [next(drawn) for _ in report.rankings],
        "cost": next(drawn) if report.advice else "",
        "scaling": next(drawn) if report.curves else "",
        "timelines": list(drawn),
    }
    template = html_environment().get_template("report.html.j2")
    return template.render(r=report, charts=charts, top=TOP, version=version("gpuscout"))


def _call(job: tuple[Callable[[Any], str], Any]) -> str:
    return job[0](job[1])


def _draw(jobs: list[tuple[Callable[[Any], str], Any]]) -> list[str]:
    """Each chart's SVG, in order. A chart is a second of layout on this project's machines,
    and a report of 100 runs draws a dozen: where the machine has several cores and this
    process no other thread (forking one with threads is unsafe), forked workers draw them
    side by side, each inheriting the imported matplotlib. The SVG is the same either way:
    its ids come from a fixed hash salt, not the process."""
    workers = min(len(jobs), usable_cores(), MAX_WORKERS)  # the cores this process may use
    if workers < 2 or threading.active_count() > 1 or "fork" not in mp.get_all_start_methods():
        return [_call(job) for job in jobs]
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
        return list(pool.map(_call, jobs))
