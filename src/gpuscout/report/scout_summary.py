"""The terminal summary ``gpuscout scout`` ends with, the answer first: one line with the
option recommended for the job, its time and cost and why (``advise.headline``); the job and
how it was chosen; the articles' checklist in one sentence and whether it agrees; the top
options; then what was measured and where this machine stands among the catalog's GPUs. Each
line is marked measured or predicted."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpuscout.core.records import RunResult
from gpuscout.core.text import printable
from gpuscout.core.units import fmt_hours, fmt_rate, fmt_seconds, fmt_sig, fmt_usd
from gpuscout.report.document import Report

TOP = 5
ADVICE_TOP = 3


def _measured_table(runs: list[RunResult]) -> Table:
    table = Table(title="gpuscout scout · measured here", title_justify="left")
    for name in ("run", "workload", "device", "set-up", "samples/s [95% CI]", "epoch", "status"):
        table.add_column(name, justify="right" if name in ("run", "epoch") else "left")
    for r in runs:
        sps = r.samples_per_second
        ci = (
            f"{fmt_rate(sps.median)} [{fmt_rate(sps.ci_low)} - {fmt_rate(sps.ci_high)}]"
            if sps and sps.ci_low is not None and sps.ci_high is not None
            else (fmt_rate(sps.median) if sps else "-")
        )
        if sps and r.status == "ok" and (sps.ci_low is None or sps.ci_high is None):
            ci += " (interval undefined: too few steps)"
        table.add_row(
            str(r.id), _text(r.workload), _text(r.device),
            _text(f"{r.precision}, batch {r.batch_size}, {r.backend}"),
            ci, fmt_seconds(r.epoch_seconds) if r.epoch_seconds else "-",
            _text(r.status if r.status == "ok" else f"{r.status}: {r.message}"),
        )  # fmt: skip
    return table


def _text(value: str) -> Text:
    """A stored value as a cell: never rich markup, control characters as escapes."""
    return Text(printable(value))


def print_answer(report: Report, console: Console) -> None:
    """The headline, the job, the checklist in a sentence and the top options: what a user
    who asked "which GPU?" reads first."""

    def say(line: str, style: str = "") -> None:  # as text: names are never rich markup
        # one logical line each, never broken by rich: the terminal wraps it, a pipe keeps it
        console.print(Text(printable(line), style=style), soft_wrap=True)

    say(report.headline, "bold")
    if report.job:
        say(f"the job: {report.job}" + (f" ({report.job_note})" if report.job_note else ""))
    elif report.job_note:
        say(f"the job: {report.job_note}")
    if report.quick:
        say(f"checklist: {report.quick_sentence}")
    if report.quick_vs_advice:
        label = "checklist and advice agree:" if report.quick_agrees else "why they differ:"
        say(f"{label} {report.quick_vs_advice}")
    if report.advice:
        say("advice (predicted; 'on the front': nothing else is both faster and cheaper):")
        for i, c in enumerate(report.advice.ranked[:ADVICE_TOP], 1):
            front = ", on the front" if c.pareto else ""
            say(f"  #{i} {c.label}: {fmt_hours(c.hours)}, {fmt_usd(c.total_usd)}{front}")
        for line in report.advice.caveats:
            say(f"caveat: {line}")


def print_summary(report: Report, runs: list[RunResult], console: Console) -> None:
    def say(line: str) -> None:  # as text: names and messages are never rich markup
        console.print(Text(printable(line)))

    def warn(line: str) -> None:
        console.print(Text("warning: ", style="yellow") + Text(printable(line)))

    print_answer(report, console)
    console.print(_measured_table(runs))
    for r in runs:  # a result's warnings travel with it, as ``runs show`` lists them
        for warning in r.warnings:
            warn(f"run {r.id} ({r.workload} on {r.device}): {warning}")
    for ranking in report.rankings:
        predicted = [row for row in ranking.rows if row.kind == "predicted"][:TOP]
        if not predicted:
            continue
        table = Table(
            title=f"{ranking.workload} · predicted, fastest {len(predicted)} of the catalog",
            title_justify="left",
        )
        for name in ("GPU", "set-up", f"{ranking.unit}/s", "epoch", f"vs {ranking.reference}"):
            table.add_column(name, justify="left" if name in ("GPU", "set-up") else "right")
        for row in predicted:
            table.add_row(
                _text(row.gpu), _text(row.setup), fmt_rate(row.samples_per_second),
                fmt_seconds(row.epoch_seconds) if row.epoch_seconds else "-",
                f"{fmt_sig(row.relative)}x" if row.relative else "-",
            )  # fmt: skip
        console.print(table)
        for row in ranking.rows:
            if row.kind == "measured" and row.relative is not None:
                say(
                    f"this machine ({row.gpu}, {row.setup}): {fmt_sig(row.relative)}x the "
                    f"predicted {ranking.reference} on {ranking.workload}"
                )
            elif row.kind == "measured" and row.relative_note:
                say(
                    f"this machine ({row.gpu}, {row.setup}) against the predicted "
                    f"{ranking.reference} on {ranking.workload}: {row.relative_note} (its "
                    "interval is undefined: too few measured steps)"
                )
    for line in report.assumptions:
        if line.startswith(("the job takes", "'")):  # the job's size; a model not predicted
            say(f"assumption ({line})")
