"""``gpuscout scout``, the main job, end to end on a tiny budget: a real measurement, stored,
predicted, priced, advised, written as HTML and Markdown, and published to TensorBoard and
MLflow (one training shared by all of these checks: ``bench`` publishes through the same
code)."""

from __future__ import annotations

import warnings
from datetime import datetime
from pathlib import Path

import pytest

from tests.cli.test_publish_cli import tensorboard_scalars
from tests.conftest import assert_user_errors, run_cli


def test_scout_measures_reports_summarises_and_publishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow", reason="mlflow is in the test extras; install .[test]")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a folder store, for the test only
    html, md, logdir = tmp_path / "out" / "report.html", tmp_path / "report.md", tmp_path / "tb"
    res = run_cli("scout", "--measure", "mlp=2", "--html", str(html), "--md", str(md), "-q",
                  "--note", "ci <scout>", "--tensorboard", str(logdir), "--mlflow")  # fmt: skip
    assert res.code == 0, res.err
    for text in ("measured here", "predicted, fastest 5", "checklist (the articles' rule)",
                 "advice #1 (predicted)", f"report: {html}"):  # fmt: skip
        assert text in res.out
    listed = run_cli("runs", "list", "--json", block_tf=True).json()
    assert [r["workload"] for r in listed] == ["mlp"] and listed[0]["status"] == "ok"
    page = html.read_text()
    assert page.count('<figure class="chart"') >= 3 and "ci &lt;scout&gt;" in page
    text = md.read_text()
    assert "## Advice" in text
    # The default job is epochs a user recognises, said as an assumption, not GPU-hours.
    assert "job: 20 epochs of mlp (1.20 M samples)" in res.out
    assert "assumption (default job for mlp: 20 epochs" in res.out
    # The checklist and advice #1 are set side by side with the reason they differ.
    assert "why they differ: " in res.out or "agree" in res.out
    assert "never prices the job" in text or "agree" in text
    assert "## Sources" in text and "article 001, '性能对比测试" in text
    _published(logdir)


def _published(logdir: Path) -> None:
    """The stored run, read back from TensorBoard's event files and a real MLflow store."""
    shown = run_cli("runs", "show", "1", "--json", "--steps", block_tf=True).json()
    steps = shown["step_times_s"]
    scalars = tensorboard_scalars(logdir / "run-1-mlp")
    assert [s for s, _ in scalars["step/time_s"]] == list(range(len(steps)))
    assert [v for _, v in scalars["step/time_s"]] == pytest.approx(steps, rel=1e-6)
    assert scalars["run/samples_per_second"][0][1] == pytest.approx(
        shown["samples_per_second"]["median"], rel=1e-6
    )
    assert any(tag.startswith("monitor/cpu") for tag in scalars)  # the monitor's series
    import mlflow

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
        history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "step_time_s")
    assert run.data.params["workload"] == "mlp" and run.data.params["note"] == "ci <scout>"
    assert run.data.metrics["samples_per_second"] == pytest.approx(
        shown["samples_per_second"]["median"]
    )
    ordered = sorted(history, key=lambda m: m.step)
    assert [m.value for m in ordered] == pytest.approx(steps)
    # Each step carries the time it ended: in order, ending when the run was stored.
    stamps = [m.timestamp / 1000 for m in ordered]
    assert stamps == sorted(stamps) and stamps[0] < stamps[-1]
    end = datetime.fromisoformat(shown["created_at"]).timestamp()
    assert stamps[-1] == pytest.approx(end, abs=1.0)
    assert stamps[0] == pytest.approx(end - sum(steps[1:]), abs=1.0)


def test_scout_bad_input_is_one_line() -> None:
    assert_user_errors(
        [
            (("scout", "--measure", "nosuch=5"), "unknown workload 'nosuch'"),
            (("scout", "--measure", "mlp=0"), "the value in 'mlp=0': must be above 0"),
            (("scout", "--answers", "yes,no"), "--answers needs 4 answers"),
        ]
    )
