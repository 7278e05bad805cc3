"""The answer first (issue 30): the report and the scout summary open with one line naming the
option for the stated job, its time and cost and why; a report prices the job it is told
(``--job``) or says which it assumed; charts on a linear scale whose labels never overlap.

Runs are planted in a real SQLite store and the report written by the CLI with TensorFlow
blocked; the charts are laid out by a real headless Chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from gpuscout.advise.recommend import Advice, Candidate
from gpuscout.catalog import load_catalog
from gpuscout.core.records import BenchConfig
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.report.charts import cost_chart, ranking_chart
from gpuscout.report.document import Ranking, RankRow, build_report
from gpuscout.report.scout_summary import print_answer
from gpuscout.store import Store
from tests.conftest import run_cli
from tests.report.browser import CHROMIUM, DRIVER, MISSING, chromium, overlapping_labels
from tests.report.runs import _run, report_runs


def _stored(tmp: Path, *extra: object) -> str:
    db = tmp / "r.sqlite"
    with Store(db) as store:
        store.save_many([*report_runs(), *extra])  # type: ignore[list-item]
    return str(db)


def _unescaped(md: str) -> str:
    return re.sub(r"\\(.)", r"\1", md)


def test_a_report_opens_with_the_answer_and_says_the_job_it_assumed(tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    res = run_cli("report", "--db", _stored(tmp_path), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    text = _unescaped(md.read_text())
    lines = text.splitlines()
    assert lines[0] == "# gpuscout report"
    headline = lines[2].strip("*")
    assert headline.startswith("For 90 epochs x 1,281,167 images of resnet50: rent ")
    assert res.out.strip() == headline  # the terminal prints the same line
    # not chosen from the runs (most of them are mlp): assumed, and how to change it, said
    assert "(assumed: the articles' benchmark — name yours with --model FILE.py:FUNCTION" in text
    assert "--job WORKLOAD, or --job run:ID" in text
    # the answer, the job, the checklist in a sentence, the ranked options, then the rest
    marks = ("**For ", "The job: ", "The articles' checklist asks four yes/no questions",
             "## Options for this job, ranked", "## Ranking")  # fmt: skip
    at = [text.index(m) for m in marks]
    assert at == sorted(at), at


def test_job_names_the_priced_job_a_workload_or_a_stored_runs_set_up(tmp_path: Path) -> None:
    db, md = _stored(tmp_path), tmp_path / "r.md"
    res = run_cli("report", "--db", db, "--md", str(md), "--job", "mlp", block_tf=True)
    assert res.code == 0, res.err
    assert res.out.startswith("For 20 epochs x 60,000 samples of mlp: ")
    # an 8-second job: the line says the choice hardly matters, not "rent 8 GPUs"
    assert "the job takes under a minute, so the choice hardly matters" in res.out
    assert "the articles' benchmark" not in md.read_text()  # named, not assumed
    res = run_cli("report", "--db", db, "--md", str(md), "--job", "run:4", "--epochs", "9",
                  "--objective", "cheapest", "--deadline", "2h", block_tf=True)  # fmt: skip
    assert res.code == 0, res.err
    assert res.out.startswith("For 9 epochs x 1,281,167 images of resnet50: rent ")
    assert "; cheapest option that meets the 2 h deadline" in res.out
    assert "the job's set-up from stored run 4: resnet50, batch 256 per GPU" in md.read_text()


def test_a_model_whose_file_is_gone_is_said_in_the_report_not_a_failure(tmp_path: Path) -> None:
    """So is one that cannot be traced here (no TensorFlow): the report is written anyway."""
    spec = str(tmp_path / "gone.py") + ":build"
    mine = _run(workload=spec, config=BenchConfig(model=spec), note=None)
    here = str(Path(__file__).parents[1] / "data" / "user_models.py") + ":compiled_regressor"
    untraced = _run(workload=here, config=BenchConfig(model=here), note=None)
    db, md = _stored(tmp_path, mine, untraced), tmp_path / "r.md"
    res = run_cli("report", "--db", db, "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    text = _unescaped(md.read_text())
    gone = f"its model file '{tmp_path / 'gone.py'}' is gone (moved or deleted since run 7"
    assert gone in text
    assert f"'{here}' is your own model: no GPU predictions for it: " in text
    assert "TensorFlow" in text.split(f"'{here}' is your own model")[1].split("\n")[0]
    res = run_cli("report", "--db", db, "--md", str(md), "--job", "run:7", block_tf=True)
    assert res.code == 0, res.err
    assert res.out.startswith("No recommendation: the job is run 7's set-up, but " + gone[:30])
    assert "## Options for this job" not in md.read_text()


def test_the_terminal_never_says_why_they_differ_above_an_agreement() -> None:
    catalog = load_catalog()
    with_runs = [_run(workload="resnet50")]
    job = resolve_job(JobSpec(workload="resnet50", epochs=90), catalog)
    seen = set()
    # an RTX 3090 rental is the cheapest; one GPU within 26 h, an RTX 4090: agreement
    one_in_26h = {"objective": "cheapest", "deadline_hours": 26.0, "counts": (1,)}
    for constraints in ({"objective": "cheapest"}, {"objective": "fastest"}, one_in_26h):
        report = build_report(with_runs, catalog, job=job, constraints=constraints)
        console = Console(record=True, width=400)
        print_answer(report, console)
        text = console.export_text()
        assert text.splitlines()[0] == report.headline
        said = next(line for line in text.splitlines() if "The checklist" in line)
        if report.quick_agrees:
            assert said.startswith("checklist and advice agree: ") and "differ" not in said
        else:
            assert said.startswith("why they differ: ") and "agree" not in said
        seen.add(report.quick_agrees)
    assert seen == {True, False}  # both wordings were checked


def _row(gpu: str, kind: str, sps: float) -> RankRow:
    return RankRow(gpu, kind, "fp32", sps, sps * 0.9, sps * 1.1, None, None, "-", "-", "-")  # type: ignore[arg-type]


def test_throughput_bars_are_linear_and_a_row_too_slow_for_a_bar_is_its_number() -> None:
    rows = [_row("B200", "predicted", 3000.0), _row("T4", "predicted", 400.0),
            _row("CPU:0 (run 1)", "measured", 3.2)]  # fmt: skip
    svg = ranking_chart(Ranking("resnet50", "images", 1_281_167, "RTX 3090", rows))
    assert "log" not in svg  # the axis says no log scale, and no tick reads 10^3
    assert svg.count("too few for a bar at this scale") == 1
    assert "3.20 images/s" in svg and "400 images/s" not in svg  # T4 is a bar, not a number


@pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason=MISSING)
def test_chart_labels_never_overlap_in_a_browser_however_close_the_options(
    tmp_path: Path,
) -> None:
    """Fourteen options on the front, close together: each named where its name covers no
    other (or left unnamed and counted), as Chromium lays the page out."""
    front = [
        Candidate(f"gpu-{i}", 8, "provider", 1.0 + 0.05 * i, 1.0, 100.0 - 1.5 * i, 1.0, 1.0,
                  pareto=True)
        for i in range(14)
    ]  # fmt: skip
    page = tmp_path / "c.html"
    svg = cost_chart(Advice(front, front, {}, []))
    page.write_text(f'<html><body><figure class="chart" data-chart="cost">{svg}</figure>')
    with chromium(1000, 800) as driver:
        driver.get(page.as_uri())
        overlaps = overlapping_labels(driver)
    assert overlaps == []
    named = svg.count("8x gpu-")
    assert named >= 4  # most have room near their point
    if named < len(front):
        assert f"({len(front) - named} of the front unnamed for room: see the table)" in svg
