"""``bench --tensorboard DIR --mlflow``: a real run's figures read back from TensorBoard's event
files and from a real MLflow tracking store (a local folder)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.conftest import run_cli


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    import tensorflow as tf

    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for v in event.summary.value:
                if v.metadata.plugin_data.plugin_name == "scalars":
                    value = float(tf.make_ndarray(v.tensor))
                    out.setdefault(v.tag, []).append((event.step, value))
    return out


def test_bench_writes_tensorboard_and_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow", reason="mlflow is in the test extras; install .[test]")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a folder store, for the test only
    logdir = tmp_path / "tb"
    res = run_cli(
        "bench", "--workload", "mlp", "--steps", "12", "--warmup-steps", "2", "-q",
        "--tensorboard", str(logdir), "--mlflow", "--note", "<b>tb</b>",
    )  # fmt: skip
    assert res.code == 0, res.err
    shown = run_cli("runs", "show", "1", "--json", "--steps", block_tf=True).json()
    steps = shown["step_times_s"]
    scalars = _scalars(logdir / "run-1-mlp")
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
    assert run.data.params["workload"] == "mlp" and run.data.params["note"] == "<b>tb</b>"
    assert run.data.metrics["samples_per_second"] == pytest.approx(
        shown["samples_per_second"]["median"]
    )
    assert [m.value for m in sorted(history, key=lambda m: m.step)] == pytest.approx(steps)


def test_unwritable_tensorboard_dir_fails_before_measuring(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = run_cli("bench", "--workload", "mlp", "--steps", "3", "-q", "--tensorboard",
                  str(blocker / "tb"), block_tf=True)  # fmt: skip
    assert res.code == 2 and "cannot write --tensorboard" in res.err
    assert len(res.err.strip().splitlines()) == 1
