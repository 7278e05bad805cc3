"""The report in Markdown: the same tables as the HTML, every value escaped."""

from __future__ import annotations

from importlib.metadata import version

from gpuscout.report.document import Report
from gpuscout.report.html import TOP
from gpuscout.report.templating import markdown_environment


def render_markdown(report: Report) -> str:
    template = markdown_environment().get_template("report.md.j2")
    return template.render(r=report, top=TOP, version=version("gpuscout"))
