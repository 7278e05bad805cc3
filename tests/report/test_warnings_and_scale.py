"""A result's warnings travel with it (issue 17), and a report over more runs than it shows
one by one summarises the rest.

Runs are planted in a real SQLite store; the report is written by the CLI, and the scout
summary printed from the same stored runs by the code ``scout`` ends with.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from rich.console import Console

from gpuscout.catalog import load_catalog
from gpuscout.core.records import Interval, RunResult
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.report.document import build_report
from gpuscout.report.scout_summary import print_summary
from gpuscout.report.summary import DETAIL_LIMIT
from gpuscout.store import Store
from tests.conftest import run_cli
from tests.report.runs import _run

# What a 15-second ResNet-50 scout on a slow machine stores: 3 measured steps, no interval.
WARNINGS = [
    "too short: only 3 measured steps. Raise --seconds for at least 10",
    "no steady state was detected",
]


def _short_resnet() -> RunResult:
    return _run(
        workload="resnet50",
        device="GPU:0",
        precision="mixed_float16",
        samples_per_second=Interval(median=2_400.0, ci_low=None, ci_high=None),
        epoch_samples=1_281_167,
        epoch_unit="images",
        measured_steps=3,
        warnings=WARNINGS,
        env={"tensorflow": "2.21.0", "device_name": "NVIDIA A100-SXM4-80GB"},
    )


def test_report_shows_each_runs_warnings_and_no_ratio_without_an_interval(
    tmp_path: Path,
) -> None:
    db = tmp_path / "w.sqlite"
    with Store(db) as store:
        store.save_many([_short_resnet(), _run()])
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    res = run_cli("report", "--db", str(db), "--html", str(html), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    for text in (html.read_text(), md.read_text()):
        for warning in WARNINGS:
            # once beside its ranking row, once in the runs' warnings
            assert text.count(warning) == 2, warning
        assert "not computed" in text
    row = next(line for line in md.read_text().splitlines() if "GPU:0 \\(run 1\\)" in line)
    assert "| not computed |" in row  # the ratio cell, not a number


def test_scout_summary_shows_each_runs_warnings(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        runs = [store.get(r.id) for r in store.save_many([_short_resnet(), _run()])]
    catalog = load_catalog()
    job = resolve_job(JobSpec(workload="resnet50", epochs=90), catalog)
    report = build_report(runs, catalog, job=job)
    console = Console(record=True, width=250)
    print_summary(report, runs, console)
    text = console.export_text()
    for warning in WARNINGS:
        assert f"warning: run 1 (resnet50 on GPU:0): {warning}" in text
    assert "interval undefined" in text
    assert "not computed" in text
    # no ratio to the reference is derived from the run without an interval
    assert not re.search(r"this machine \(GPU:0 \(run 1\).*x the predicted", text)


def test_a_large_store_is_summarised_beyond_the_newest_runs(tmp_path: Path) -> None:
    total = DETAIL_LIMIT + 50
    db = tmp_path / "many.sqlite"
    runs = [
        _run(
            device=f"CPU:{i % 2}",
            precision="fp32" if i % 5 else "mixed_float16",
            samples_per_second=Interval(median=1_000.0 + i, ci_low=990.0 + i, ci_high=1_010.0 + i),
            status="ok" if i % 7 else "error",
            message=None if i % 7 else "failed",
        )
        for i in range(total)
    ]
    with Store(db) as store:
        store.save_many(runs)
    md = tmp_path / "r.md"
    res = run_cli("report", "--db", str(db), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    text = md.read_text()
    assert f"{total} stored runs: the newest {DETAIL_LIMIT} are shown run by run" in text
    aggregate = text.split("runs, summarised")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in aggregate.splitlines() if line.startswith("| mlp")]
    assert len(rows) == 4  # 2 devices x 2 precisions
    assert sum(int(r[3].replace(",", "")) for r in rows) == total
    best_runs = {int(r[7].strip(" |")) for r in rows}  # the fastest ok run of each group
    fastest = max((i for i in range(total) if i % 7), key=lambda i: 1_000.0 + i)
    assert fastest + 1 in best_runs
    runs_table = text.split(f"## The newest {DETAIL_LIMIT} runs")[1].split("\n## ")[0]
    ids = [int(m) for m in re.findall(r"^\| (\d+) \|", runs_table, re.M)]
    assert ids == list(range(total - DETAIL_LIMIT + 1, total + 1))


def test_a_small_store_is_not_summarised(tmp_path: Path) -> None:
    """Up to the limit the report is as before: every run in detail, no aggregate table."""
    with Store(tmp_path / "few.sqlite") as store:
        store.save_many([_run(), _run()])
    md = tmp_path / "r.md"
    res = run_cli("report", "--db", str(tmp_path / "few.sqlite"), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    text = md.read_text()
    assert "from 2 stored run(s)." in text and "summarised" not in text and "## Runs" in text


def test_a_ranking_chart_draws_the_fastest_measured_runs_only() -> None:
    from gpuscout.report.charts import MAX_MEASURED_BARS, ranking_chart
    from gpuscout.report.document import Ranking, RankRow

    def row(i: int, kind: Literal["measured", "predicted"]) -> RankRow:
        return RankRow(f"dev{i}", kind, "fp32", 100.0 * (i + 1), None, None, None, None,
                       "-", "-", "-")  # fmt: skip

    rows = [row(i, "measured") for i in range(40)] + [row(i, "predicted") for i in range(3)]
    rows.sort(key=lambda r: -r.samples_per_second)
    svg = ranking_chart(Ranking("mlp", "samples", 0, "RTX 3090", rows))
    assert f"fastest {MAX_MEASURED_BARS} of 40 measured runs" in svg
    assert svg.count("[measured]") == MAX_MEASURED_BARS and svg.count("[predicted]") == 3


def test_a_run_no_measurement_gives_is_left_out_of_the_report_and_named(tmp_path: Path) -> None:
    """An interval above its median (imports refuse it now; an older gpuscout stored it) made
    every report over the store crash ('xerr' must not contain negative values)."""
    db = tmp_path / "old.sqlite"
    bad = _run(samples_per_second=Interval(median=1_001.0, ci_low=1_500.0, ci_high=1_600.0))
    with Store(db) as store:
        store.save_many([bad, _run()])  # saved directly: what an older import let through
    md = tmp_path / "r.md"
    res = run_cli("report", "--db", str(db), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    text = md.read_text()
    assert "run 1 left out" in text and "runs delete 1" in text
    assert "\\(run 2\\)" in text and "\\(run 1\\)" not in text  # Markdown-escaped
