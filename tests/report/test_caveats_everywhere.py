"""One truth per fact (issue 42, item 7): the caveat a recurrent model's prediction carries
(its loops counted kernel by kernel, as XLA runs them, where cuDNN's fused LSTM can be several
times faster) reaches ``predict``, ``advise``, ``cost``, ``scout``'s summary and the HTML
report, word for word from ``predict.caveats``; a model without loops carries none."""

from __future__ import annotations

import html
import json
from pathlib import Path

from rich.console import Console

from gpuscout.catalog import load_catalog
from gpuscout.predict.caveats import LOOP_CAVEAT
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.report.document import build_report
from gpuscout.report.scout_summary import print_answer
from gpuscout.store import Store
from tests.conftest import run_cli
from tests.report.runs import report_runs

EXAMPLE = Path(__file__).parents[2] / "examples" / "models" / "lstm.py"
MODEL = f"{EXAMPLE}:build"


def test_the_recurrent_caveat_reaches_every_command(tmp_path: Path) -> None:
    predict = run_cli("predict", "--model", MODEL, "--gpus", "rtx-4090,t4", "--json")
    assert predict.code == 0, predict.err  # traced here (TensorFlow), cached for the rest
    assert LOOP_CAVEAT in predict.out.replace("\n", " ") or any(
        LOOP_CAVEAT in a for row in predict.json() for a in row["assumptions"]
    )
    size = ("--samples", "200000", "--epochs", "3")
    advise = run_cli("advise", "--model", MODEL, *size, "--json", block_tf=True)
    assert advise.code == 0, advise.err
    assert json.loads(advise.out)["caveats"] == [LOOP_CAVEAT]
    cost = run_cli("cost", "--model", MODEL, *size, "--option", "rtx-4090", "--json",
                   block_tf=True)  # fmt: skip
    assert cost.code == 0, cost.err
    assert cost.json()["assumptions"]["caveats"] == LOOP_CAVEAT
    page, db = tmp_path / "report.html", tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save_many(report_runs()[:1])
    report = run_cli("report", "--db", str(db), "--model", MODEL,
                     *size, "--html", str(page), block_tf=True)  # fmt: skip
    assert report.code == 0, report.err
    assert html.escape(LOOP_CAVEAT) in page.read_text() or LOOP_CAVEAT in html.unescape(
        page.read_text()
    )
    # scout ends with this summary (after measuring, which adds nothing to the caveat)
    catalog = load_catalog()
    job = resolve_job(JobSpec(model=MODEL, samples=200_000, epochs=3), catalog)
    console = Console(record=True, width=100_000)
    print_answer(build_report(report_runs()[:1], catalog, job=job), console)
    assert f"caveat: {LOOP_CAVEAT}" in console.export_text()


def test_a_model_without_loops_carries_no_caveat() -> None:
    r = run_cli("advise", "--workload", "resnet50", "--epochs", "1", "--json", block_tf=True)
    assert r.code == 0, r.err
    assert json.loads(r.out)["caveats"] == []
