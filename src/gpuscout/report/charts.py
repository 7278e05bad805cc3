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
from typing import TYPE_CHECKING, Any

from gpuscout.advise.recommend import Advice
from gpuscout.core.text import printable
from gpuscout.core.units import fmt_rate
from gpuscout.report.chart_data import Curve, Timeline
from gpuscout.report.ranking import Ranking, RankRow

MEASURED = "#d95f02"  # orange: measured here
PREDICTED = "#7570b3"  # violet: predicted from the catalog
FRONT = "#1b9e77"
MAX_MEASURED_BARS = 15  # measured runs drawn in a ranking chart; the table lists them all
SMALL = 0.02  # a throughput under this share of the chart's longest bar is written, not drawn

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
    """Horizontal bars of throughput on a linear scale, ranges as error bars, measured in
    orange. Linear, because a log scale makes a B200 look like a T4; a row too slow for a
    visible bar at that scale (a CPU beside data-center GPUs) is written as its number."""
    drawn, left_out = _chart_rows(ranking)
    rows = list(reversed(drawn))
    top = max(r.high if r.high is not None else r.samples_per_second for r in rows)
    with _figure(7.5, 0.28 * len(rows) + 1.2) as (fig, (ax,)):
        bars = [(y, r) for y, r in enumerate(rows) if r.samples_per_second >= SMALL * top]
        values = [r.samples_per_second for _, r in bars]
        err = [
            [r.samples_per_second - (r.low if r.low is not None else r.samples_per_second)
             for _, r in bars],
            [(r.high if r.high is not None else r.samples_per_second) - r.samples_per_second
             for _, r in bars],
        ]  # fmt: skip
        ax.barh(
            [y for y, _ in bars], values, xerr=err, ecolor="#333333", capsize=2,
            color=[MEASURED if r.kind == "measured" else PREDICTED for _, r in bars],
        )  # fmt: skip
        for y, r in enumerate(rows):
            if r.samples_per_second < SMALL * top:
                ax.annotate(
                    _label(f"{fmt_rate(r.samples_per_second)} {ranking.unit}/s (too few for a bar "
                           "at this scale)"), (0, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8,
                    color=MEASURED if r.kind == "measured" else PREDICTED,
                )  # fmt: skip
        ax.set_yticks(list(range(len(rows))), [_label(f"{r.gpu} [{r.kind}]") for r in rows])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlim(0, top * 1.04)
        _plain_linear_ticks(ax.xaxis)
        ax.set_xlabel(f"{ranking.unit}/s (bars: range)")
        ax.set_title(_label(f"{ranking.workload}: training throughput{left_out}"))
        return _svg(fig)


def cost_chart(advice: Advice) -> str:
    """Every feasible option's time against its cost (log-log), the Pareto front joined and
    its options named beside their points, where a name fits without covering another."""
    everyone = advice.ranked
    front = sorted(advice.pareto, key=lambda c: c.hours)
    with _figure(7.5, 4.2) as (fig, (ax,)):
        ax.scatter(
            [c.hours for c in everyone], [c.total_usd for c in everyone],
            s=12, color=PREDICTED, alpha=0.5, label="an option (GPUs x count, where)",
        )  # fmt: skip
        ax.plot(
            [c.hours for c in front], [c.total_usd for c in front], marker="o", color=FRONT,
            label="nothing else is both faster and cheaper",
        )  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis, [c.hours for c in everyone])
        _plain_log_ticks(ax.yaxis, [c.total_usd for c in everyone])
        ax.set_xlabel("hours to finish (log)")
        ax.set_ylabel("total cost, USD (log)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=2, frameon=False)
        unnamed = _name_points(fig, ax, [(f"{c.count}x {c.gpu} @ {c.provider}", c.hours,
                                          c.total_usd) for c in front])  # fmt: skip
        ax.set_title(
            "time vs cost, predicted"
            + (f" ({unnamed} of the front unnamed for room: see the table)" if unnamed else "")
        )
        return _svg(fig)


def _plain_log_ticks(axis: Any, values: list[float]) -> None:
    """A log axis read as plain numbers (0.5, 1, 2, 5, 10) rather than powers of ten, 1-2-5
    a decade over a short range and one a decade over a long one, so the labels never crowd
    (matplotlib's minor labels, 2x10^1 3x10^1 ..., collide on a short axis)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    positive = [v for v in values if v > 0]
    decades = math.log10(max(positive) / min(positive)) if positive else 0.0
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _plain_linear_ticks(axis: Any) -> None:
    """At most six ticks, written short (250k, 1.5M): long GPU names leave the bars a narrow
    axis, where matplotlib's default of nine six-digit labels runs together in a browser."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))


def _short(value: float) -> str:
    """A tick value in at most four characters and a suffix: 0, 750, 12.5k, 200k, 1.5M."""
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


# Room kept around a point's name, in pixels each way: a browser draws the SVG's text in its
# own font, a little taller or wider than matplotlib measured it.
NAME_PAD = 2.5

# Where a point's name may go, in points from it: right, left, above, below, then further.
LABEL_SPOTS = (
    (5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
    (-5, -3, "right", "top"), (0, 8, "center", "bottom"), (0, -8, "center", "top"),
    (12, 12, "left", "bottom"), (12, -12, "left", "top"), (-12, 12, "right", "bottom"),
    (-12, -12, "right", "top"),
)  # fmt: skip


def _name_points(fig: Figure, ax: Axes, points: list[tuple[str, float, float]]) -> int:
    """Name each point beside it at the first spot where the name stays inside the plot and
    covers neither another name nor a named point; the layout is fixed first, so the spots
    tried are where the page shows them. Returns how many found no room."""
    from matplotlib.transforms import Bbox

    fig.draw_without_rendering()  # lay out first (the legend, the ticks), then keep it
    fig.set_layout_engine("none")
    inside = ax.get_window_extent()
    taken = []
    for _, x, y in points:  # each named point's marker, a few pixels each way
        px, py = ax.transData.transform((x, y))
        taken.append(Bbox.from_extents(px - 4, py - 4, px + 4, py + 4))
    unnamed = 0
    for text, x, y in points:
        for dx, dy, ha, va in LABEL_SPOTS:
            far = {"arrowstyle": "-", "color": "#999999", "lw": 0.5} if abs(dy) > 8 else None
            label = ax.annotate(_label(text), (x, y), xytext=(dx, dy), textcoords="offset points",
                                ha=ha, va=va, fontsize=7, arrowprops=far)  # fmt: skip
            box = label.get_window_extent().padded(NAME_PAD)
            fits = inside.x0 <= box.x0 and box.x1 <= inside.x1
            fits = fits and inside.y0 <= box.y0 and box.y1 <= inside.y1
            if fits and not any(box.overlaps(b) for b in taken):
                taken.append(box)
                break
            label.remove()
        else:
            unnamed += 1
    return unnamed


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
