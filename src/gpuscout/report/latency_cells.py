"""The cells of a latency table, shared by the terminal table and the reports: a percentile
with its interval, and whether a point is shown to meet the SLO. Where there are too few
requests for a figure it says so, never a bare "-" or "?" that reads as a value.
"""

from __future__ import annotations

from gpuscout.core.records import Interval, LatencyPoint
from gpuscout.core.units import fmt_seconds

NOT_SHOWN = "not shown (too few requests)"


def latency_cell(i: Interval | None, with_ci: bool = False) -> str:
    if i is None:
        return NOT_SHOWN
    text = fmt_seconds(i.median)
    if with_ci:
        if i.ci_low is None and i.ci_high is None:
            return f"{text} [interval {NOT_SHOWN}]"
        low = fmt_seconds(i.ci_low) if i.ci_low is not None else "not shown"
        high = fmt_seconds(i.ci_high) if i.ci_high is not None else "not shown"
        text += f" [{low} - {high}]"
    return text


def slo_cell(p: LatencyPoint, slo_s: float) -> str:
    """Whether a point is shown to meet the SLO. Without an upper bound on p99 nothing is
    shown either way, unless the measured p99 itself is already over the target."""
    if p.meets_slo:
        return "yes"
    if p.p99_s.ci_high is None and p.p99_s.median <= slo_s:
        return NOT_SHOWN
    return "no"
