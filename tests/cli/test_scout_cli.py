"""``gpuscout scout``, the main job, end to end on a tiny budget: a real measurement, stored,
predicted, priced, advised, written as HTML and Markdown, and published to TensorBoard and
MLflow (one training shared by all of these checks: ``bench`` publishes through the same
code).

``scout`` runs in this process (``tests/cli/in_process.py``): its measuring child is still a
real process, but the command's own TensorFlow start (TensorBoard's writer, your model's
trace) and MLflow's import are the test process's, paid once; what needs no TensorFlow to run
is checked with it blocked in a fresh interpreter where the test says so."""

from __future__ import annotations

import re
import shutil
import warnings
from datetime import datetime
from pathlib import Path

import pytest

from tests.cli.test_publish_cli import tensorboard_scalars
from tests.conftest import assert_user_errors, run_cli, run_in_process


def test_scout_measures_reports_summarises_and_publishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow", reason="mlflow is in the test extras; install .[test]")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a folder store, for the test only
    html, md, logdir = tmp_path / "out" / "report.html", tmp_path / "report.md", tmp_path / "tb"
    res = run_in_process(
        "scout", "--measure", "mlp=2", "--html", str(html), "--md", str(md), "-q",
        "--note", "ci <scout>", "--tensorboard", str(logdir), "--mlflow",
        stderr_file=True)  # fmt: skip
    assert res.code == 0, res.err
    assert res.out.startswith("For 20 epochs x 60,000 samples of mlp: ")  # the answer first
    for text in ("measured here", "predicted, fastest 5", "checklist: The articles' checklist",
                 "advice (predicted", "  #1 ", f"report: {html}"):  # fmt: skip
        assert text in res.out
    listed = run_in_process("runs", "list", "--json").json()
    assert [r["workload"] for r in listed] == ["mlp"] and listed[0]["status"] == "ok"
    page = html.read_text()
    assert page.count('<figure class="chart"') >= 3 and "ci &lt;scout&gt;" in page
    text = md.read_text()
    assert "## Options for this job, ranked (predicted)" in text
    # The job no one named: epochs a user recognises, said as assumed, with how to change it.
    assert "the job: 20 epochs x 60,000 samples of mlp (assumed: the first workload scout " in (
        res.out
    )
    assert "name yours with --model FILE.py:FUNCTION --samples N --epochs E" in res.out
    assert "its size: 20 epochs, as Keras' classic MNIST MLP example trains" in res.out
    # The checklist and advice #1 are set side by side with the reason they differ.
    assert "why they differ: " in res.out or "checklist and advice agree: " in res.out
    assert "never prices the job" in text or "agree" in text
    assert "## Sources" in text and "article 001, '性能对比测试" in text
    _published(logdir)


def _published(logdir: Path) -> None:
    """The stored run, read back from TensorBoard's event files and a real MLflow store."""
    shown = run_in_process("runs", "show", "1", "--json", "--steps").json()
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


def test_scout_with_your_model_is_the_whole_journey_in_one_command(tmp_path: Path) -> None:
    """``scout --model`` measures your model here (and nothing else), predicts it on the
    catalog, prices and ranks the job under the deadline and budget, and opens the summary and
    the report with the answer. ``report`` then takes the same model; once its file is gone,
    the report says so instead of failing."""
    model = tmp_path / "my_model.py"
    shutil.copy(Path(__file__).parents[1] / "data" / "user_models.py", model)
    spec = f"{model}:compiled_regressor"
    html, md, db = tmp_path / "report.html", tmp_path / "report.md", str(tmp_path / "s.sqlite")
    job = ("--samples", "1200000", "--epochs", "50", "--deadline", "48h", "--budget", "2000")
    res = run_in_process(
        "scout", "--model", spec, "--seconds", "2", *job, "--db", db, "-q",
        "--html", str(html), "--md", str(md), stderr_file=True)  # fmt: skip
    assert res.code == 0, res.err
    headline = res.out.splitlines()[0]
    assert headline.startswith(f"For 50 epochs x 1,200,000 samples of your model {spec}: ")
    assert "that meets the 48 h deadline and the $2,000 budget" in headline
    listed = run_in_process("runs", "list", "--json", "--db", db).json()
    assert [(r["workload"], r["status"]) for r in listed] == [(spec, "ok")]  # only yours
    text = re.sub(r"\\(.)", r"\1", md.read_text())  # as a Markdown viewer shows it
    assert text.splitlines()[2].startswith("**For 50 epochs x 1,200,000 samples of your model")
    ranking = text.split("## Ranking")[1]
    assert "| GeForce RTX 4090 | predicted |" in ranking  # your runs get GPU predictions
    assert "(run 1) | measured |" in ranking
    assert "predicted rows are for mixed_float16, batch 32 per GPU (as the job is priced)" in text
    assert '<p id="headline" class="headline">For 50 epochs' in html.read_text()
    # report takes the same model (traced once: the profile is cached)
    again = run_in_process("report", "--db", db, "--md", str(md), "--model", spec, *job)
    assert again.code == 0, again.err
    assert again.out.strip() == headline
    model.unlink()  # moved away: the report says so, and needs no TensorFlow to say it
    gone = run_cli("report", "--db", db, "--md", str(md), block_tf=True)
    assert gone.code == 0, gone.err
    assert f"its model file '{model}' is gone" in re.sub(r"\\(.)", r"\1", md.read_text())


def test_scout_bad_input_is_one_line() -> None:
    assert_user_errors(
        [
            (("scout", "--measure", "nosuch=5"), "unknown workload 'nosuch'"),
            (("scout", "--measure", "mlp=0"), "the value in 'mlp=0': must be above 0"),
            (("scout", "--answers", "yes,no"), "--answers needs 4 answers"),
        ]
    )
