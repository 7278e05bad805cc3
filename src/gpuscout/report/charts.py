"""The report's charts, drawn by matplotlib as inline SVG: no script, no network, opens offline.

Text stays text (``svg.fonttype = none``) so the charts are searchable and small; matplotlib
escapes it as XML, so a model called ``<script>`` is drawn as those characters. The hash salt
and the missing date make the same report byte-identical twice.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from gpuscout.advise.recommend import Advice
from gpuscout.report.chart_data import Curve, Timeline
from gpuscout.report.document import Ranking, RankRow
from gpuscout.text import printable

MEASURED = "#d95f02"  # orange: measured here
PREDICTED = "#7570b3"  # violet: predicted from the catalog
FRONT = "#1b9e77"
MAX_MEASURED_BARS = 15  # measured runs drawn in a ranking chart; the table lists them all

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _label(text: str) -> str:
    """Stored text as a chart draws it literally: control characters as escapes, and ``$``
    escaped, since matplotlib reads ``$...$`` as mathematics (and fails on some)."""
    return printable(text).replace("$", r"\$")


@contextmanager
def _figure(width: float, height: float, rows: int = 1) -> Iterator[tuple[Figure, list[Axes]]]:
    import matplotlib

    matplotlib.use("svg", force=False)
    from matplotlib.figure import Figure

    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": "gpuscout", "font.size": 9}
    ):
        fig = Figure(figsize=(width, height), layout="constrained")
        axes = list(fig.subplots(rows, 1, squeeze=False)[:, 0])
        yield fig, axes


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: it is inline


def _chart_rows(ranking: Ranking) -> tuple[list[RankRow], str]:
    """The rows a ranking chart draws: every predicted GPU and the fastest
    :data:`MAX_MEASURED_BARS` measured runs (a store of hundreds would draw a bar per run, and
    the chart would be metres tall); the table beside it lists them all. With what was left
    out, for the title."""
    measured = [r for r in ranking.rows if r.kind == "measured"]
    if len(measured) <= MAX_MEASURED_BARS:
        return ranking.rows, ""
    kept = {id(r) for r in measured[:MAX_MEASURED_BARS]}  # rows are fastest first
    rows = [r for r in ranking.rows if r.kind != "measured" or id(r) in kept]
    return rows, f" (fastest {MAX_MEASURED_BARS} of {len(measured)} measured runs)"


def ranking_chart(ranking: Ranking) -> str:
    """Horizontal bars of throughput (log scale), ranges as error bars, measured in orange."""
    drawn, left_out = _chart_rows(ranking)
    rows = list(reversed(drawn))
    with _figure(7.5, 0.28 * len(rows) + 1.2) as (fig, (ax,)):
        ys = range(len(rows))
        values = [r.samples_per_second for r in rows]
        colors = [MEASURED if r.kind == "measured" else PREDICTED for r in rows]
        err = [
            [v - (r.low if r.low is not None else v) for v, r in zip(values, rows, strict=True)],
            [(r.high if r.high is not None else v) - v for v, r in zip(values, rows, strict=True)],
        ]
        ax.barh(list(ys), values, color=colors, xerr=err, ecolor="#333333", capsize=2)
        ax.set_yticks(list(ys), [_label(f"{r.gpu} [{r.kind}]") for r in rows])
        ax.set_xscale("log")
        ax.set_xlabel(f"{ranking.unit}/s, log scale (bars: range)")
        ax.set_title(_label(f"{ranking.workload}: training throughput{left_out}"))
        return _svg(fig)


def cost_chart(advice: Advice) -> str:
    """Every feasible option's time against its cost (log-log), the Pareto front joined."""
    everyone = advice.ranked
    front = sorted(advice.pareto, key=lambda c: c.hours)
    with _figure(7.5, 4.2) as (fig, (ax,)):
        ax.scatter(
            [c.hours for c in everyone], [c.total_usd for c in everyone],
            s=12, color=PREDICTED, alpha=0.5, label="option (GPU x count @ provider)",
        )  # fmt: skip
        ax.plot(
            [c.hours for c in front], [c.total_usd for c in front],
            marker="o", color=FRONT, label="Pareto front",
        )  # fmt: skip
        for c in front:
            ax.annotate(
                _label(f"{c.count}x {c.gpu} @ {c.provider}"), (c.hours, c.total_usd),
                textcoords="offset points", xytext=(4, 4), fontsize=7,
            )  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("hours to finish (log)")
        ax.set_ylabel("total cost, USD (log)")
        ax.set_title("time vs cost, predicted")
        ax.legend(loc="upper right")
        return _svg(fig)


def scaling_chart(curves: list[Curve]) -> str:
    """Scaling efficiency against count: measured sweeps solid with ranges, predictions dashed."""
    with _figure(7.5, 3.6) as (fig, (ax,)):
        for c in curves:
            if c.kind == "measured":
                lo = [
                    e - (lo if lo is not None else e)
                    for e, lo in zip(c.efficiency, c.low, strict=True)
                ]
                hi = [
                    (h if h is not None else e) - e
                    for e, h in zip(c.efficiency, c.high, strict=True)
                ]
                ax.errorbar(c.counts, c.efficiency, yerr=[lo, hi], marker="o", capsize=3,
                            color=MEASURED, label=_label(c.label))  # fmt: skip
            else:
                ax.plot(c.counts, c.efficiency, linestyle="--", marker=".", label=_label(c.label))
        counts = sorted({n for c in curves for n in c.counts})
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(n) for n in counts])
        top = max(
            (h or e)
            for c in curves
            for e, h in zip(c.efficiency, c.high or c.efficiency, strict=True)
        )
        ax.set_ylim(0, max(1.05, math.ceil(top * 10) / 10))
        ax.set_xlabel("devices")
        ax.set_ylabel("scaling efficiency")
        ax.set_title("scaling: throughput(n) / (n x throughput(1))")
        ax.legend(fontsize=7, loc="lower left")
        return _svg(fig)


def timeline_chart(tl: Timeline) -> str:
    """Utilization, clocks and memory over the run, one panel each."""
    panels = (
        ("utilization, %", tl.utilization),
        ("clock, MHz", tl.clocks),
        ("memory, GiB", tl.memory),
    )
    with _figure(7.5, 5.4, rows=3) as (fig, axes):
        for ax, (ylabel, series) in zip(axes, panels, strict=True):
            for name, values in series.items():
                ax.plot(tl.t, [math.nan if v is None else v for v in values], label=name)
            if series:
                ax.legend(fontsize=7, loc="upper right")
            else:
                ax.text(
                    0.5,
                    0.5,
                    "not monitored here (no GPU reported through NVML)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                )
            ax.set_ylabel(ylabel)
        axes[-1].set_xlabel("seconds since the run started")
        axes[0].set_title(_label(tl.label))
        return _svg(fig)
