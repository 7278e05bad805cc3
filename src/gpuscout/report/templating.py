"""The Jinja2 environments the HTML and Markdown reports render through, and their filters.

Escaping is the environment's job, never the template's: HTML autoescapes every value, and
the Markdown environment passes every value through :func:`md_escape`. Both first show control
characters as visible escapes (:func:`gpuscout.core.text.printable`, the environments'
``finalize``), so a NUL, an ESC or a right-to-left override in a stored name reaches no report
raw. A template cannot forget to escape a model name, a note or an imported field.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from gpuscout.core.records import Interval, LatencyPoint
from gpuscout.core.text import printable, printable_lines
from gpuscout.core.units import fmt_hours, fmt_rate, fmt_seconds, fmt_sig, fmt_usd
from gpuscout.report.latency_cells import latency_cell, slo_cell

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#!|~&$])")


def md_escape(value: Any) -> str:
    """Text as Markdown shows it literally: punctuation with a meaning is backslash-escaped
    (CommonMark allows it before any ASCII punctuation) and control characters, line breaks
    included, become visible escapes (``\\n``), so a value cannot end a table cell, start a
    line, open a link or smuggle in raw HTML or a terminal escape."""
    if value is None:
        return ""
    return _MD_SPECIAL.sub(r"\\\1", printable(value))


def html_finalize(value: Any) -> Any:
    """Every ``{{ }}`` value of the HTML report before autoescaping: text with its control
    characters as visible escapes. Markup (an inline SVG chart, a joined list) is already HTML:
    its line feeds are layout and stay, anything else unsafe in it is escaped the same way."""
    if isinstance(value, Markup):
        return Markup(printable_lines(value))
    if isinstance(value, str):
        return printable(value)
    return value


def _rate(value: float | None) -> str:
    return "-" if value is None else fmt_rate(value)


def _range(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{fmt_rate(low)} - {fmt_rate(high)}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else fmt_seconds(value)


def _hours(value: float | None) -> str:
    return "-" if value is None else fmt_hours(value)


def _times(value: float | None) -> str:
    """A speed ratio: three significant figures; small ones (a CPU against a GPU) two."""
    if value is None:
        return "-"
    return f"{fmt_sig(value, 3 if value >= 0.1 else 2)}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _usd(value: float | None) -> str:
    """A derived amount (a predicted job's price): three significant figures."""
    return "-" if value is None else fmt_usd(value)


def _latency_ci(value: Interval | None) -> str:
    return latency_cell(value, with_ci=True)


def _slo(point: LatencyPoint, slo_s: float | None) -> str:
    return "-" if slo_s is None else slo_cell(point, slo_s)


def _batch(value: int) -> str:
    """A run's batch; 0 is a ScoutCallback run told no batch size (it measured steps/s)."""
    return str(value) if value else "not given"


FILTERS = {
    "latency": latency_cell,
    "slo": _slo,
    "batch": _batch,
    "latency_ci": _latency_ci,
    "rate": _rate,
    "range": _range,
    "seconds": _seconds,
    "hours": _hours,
    "times": _times,
    "pct": _pct,
    "usd": _usd,
}


def _environment(**options: Any) -> Environment:
    env = Environment(
        loader=PackageLoader("gpuscout.report", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        **options,
    )
    env.filters.update(FILTERS)
    return env


@cache
def html_environment() -> Environment:
    return _environment(
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=html_finalize,
    )


@cache
def markdown_environment() -> Environment:
    return _environment(autoescape=False, finalize=md_escape)
