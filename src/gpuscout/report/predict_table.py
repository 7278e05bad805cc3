"""The prediction table: the ranking article 001 tried to make (``core.articles``), with ranges."""

from __future__ import annotations

from rich.table import Table

from gpuscout.core.units import fmt_rate, fmt_seconds, fmt_sig
from gpuscout.predict import Prediction
from gpuscout.predict.profile import Profile
from gpuscout.report.console import literal


def prediction_table(
    rows: list[Prediction], profile: Profile, reference: str, unit: str,
    tokens_per_sample: int | None = None,
) -> Table:  # fmt: skip
    """One row per GPU and count; a language model's rates in tokens/s too."""
    title = (
        f"gpuscout predict · {profile.workload} · {profile.precision} · batch {profile.batch} "
        f"per GPU"
    )
    table = Table(title=literal(title), title_justify="left")
    tokens = ("tokens/s",) if tokens_per_sample else ()
    for name in ("GPU", "n", f"{unit}/s", *tokens, "range", "epoch", f"vs {reference}"):
        table.add_column(name, justify="left" if name == "GPU" else "right")
    with_scaling = any(r.measured_scaling is not None for r in rows)
    names = ("scaling", "measured scaling", "fits memory", "measured", "interconnect")
    for name in names if with_scaling else (n for n in names if n != "measured scaling"):
        table.add_column(name, justify="right" if name != "interconnect" else "left")
    for r in rows:
        measured_scaling = (
            [f"{r.measured_scaling:.0%}" if r.measured_scaling is not None else ""]
            if with_scaling
            else []
        )
        table.add_row(
            literal(r.gpu),
            f"{r.nodes}x{r.count // r.nodes}" if r.nodes > 1 else str(r.count),
            fmt_rate(r.samples_per_second),
            *([fmt_rate(r.samples_per_second * tokens_per_sample)] if tokens_per_sample else []),
            f"{fmt_rate(r.low)} - {fmt_rate(r.high)}",
            fmt_seconds(r.epoch_seconds),
            f"{fmt_sig(r.relative_speed)}x" + (" ~" if r.not_distinguishable_from else ""),
            f"{r.scaling_efficiency:.0%}",
            *measured_scaling,
            f"yes ({r.memory_needed_gb:.1f} GB)"
            if r.fits_memory
            else (f"[red]no[/] ({r.memory_needed_gb:.1f} GB)"),
            fmt_rate(r.measured) if r.measured else "",
            literal(r.link or ""),
        )
    if any(r.not_distinguishable_from for r in rows):
        table.caption = (
            "~ not distinguishable from the next slower option with as many GPUs (within the "
            "model's out-of-sample error; see the assumption below)"
        )
        table.caption_justify = "left"
    return table


def breakdown_table(rows: list[Prediction], profile: Profile) -> Table:
    """Where one GPU's predicted step goes: the kernels bound by compute, by memory and by
    their launch, and the framework's cost per step; what decides how a GPU ranks."""
    title = (
        f"where the step goes · {profile.workload} · {profile.precision} · batch "
        f"{profile.batch} · one GPU · {'at least ' if profile.flops_lower_bound else ''}"
        f"{rows[0].launches if rows else 0:,} kernel launches"
    )
    table = Table(title=literal(title), title_justify="left")
    for name in ("GPU", "step", "compute-bound", "memory-bound", "launch-bound", "per step"):
        table.add_column(name, justify="left" if name == "GPU" else "right")
    for r in rows:
        if r.count != 1 or not r.split:
            continue
        total = sum(r.split.values())
        table.add_row(
            literal(r.gpu),
            fmt_seconds(total),
            *(f"{r.split.get(k, 0.0) / total:.0%}" for k in ("compute", "memory", "launch",
                                                              "step")),
        )  # fmt: skip
    return table


def inference_table(rows: list[Prediction], profile: Profile, reference: str) -> Table:
    """Predicted forward passes: the model's own part of a request's latency, and throughput."""
    title = (
        f"gpuscout predict --mode inference · {profile.workload} · {profile.precision} · "
        f"batch {profile.batch} per request · PREDICTED forward pass only"
    )
    table = Table(title=literal(title), title_justify="left")
    for name in ("GPU", "forward pass", "range", "samples/s", "range ", f"vs {reference}"):
        table.add_column(name, justify="left" if name == "GPU" else "right")
    for r in rows:
        table.add_row(
            literal(r.gpu),
            fmt_seconds(profile.batch / r.samples_per_second),
            f"{fmt_seconds(profile.batch / r.high)} - {fmt_seconds(profile.batch / r.low)}",
            fmt_rate(r.samples_per_second),
            f"{fmt_rate(r.low)} - {fmt_rate(r.high)}",
            f"{fmt_sig(r.relative_speed)}x",
        )
    return table
