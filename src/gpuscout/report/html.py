"""The report as one self-contained HTML file: styles inline, charts inline SVG, no script."""

from __future__ import annotations

from importlib.metadata import version

from gpuscout.report.charts import cost_chart, ranking_chart, scaling_chart, timeline_chart
from gpuscout.report.document import Report
from gpuscout.report.templating import html_environment

TOP = 10  # options shown in the advice table
MAX_TIMELINES = 6  # the latest runs' timelines; a report on hundreds of runs stays readable
# A summarised report (a store beyond DETAIL_LIMIT runs) draws fewer: each chart costs a second
# of layout, and a team's store is read for its tables, not for one run's clocks.
MAX_TIMELINES_SUMMARISED = 2


def render_html(report: Report) -> str:
    timelines = MAX_TIMELINES_SUMMARISED if report.summary else MAX_TIMELINES
    charts = {
        "ranking": [ranking_chart(r) for r in report.rankings],
        "cost": cost_chart(report.advice) if report.advice else "",
        "scaling": scaling_chart(report.curves) if report.curves else "",
        "timelines": [timeline_chart(t) for t in report.timelines[-timelines:]],
    }
    template = html_environment().get_template("report.html.j2")
    return template.render(r=report, charts=charts, top=TOP, version=version("gpuscout"))
