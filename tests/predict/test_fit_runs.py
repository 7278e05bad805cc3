"""ScoutCallback runs on a GPU, planted in a real store, through predict, calibrate and report.

This machine has no GPU, so the runs are composed exactly as the callback composes them
(``compose_fit_run``, which the callback calls) with the device a GPU machine reports; the
store, the catalog, the fit and the commands are real. Before, one such run made every one of
these commands fail with "unknown workload 'fit:...'".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.records import RunResult
from gpuscout.measure.fit_run import compose_fit_run, fit_rate
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.store import Store
from tests.conftest import run_cli

A100 = "NVIDIA A100-SXM4-80GB"


def _times(n: int = 200, step: float = 0.02) -> list[float]:
    """A fit's batch times: a slow first step (tracing), then steady with a little noise."""
    rng = np.random.default_rng(0)
    return [1.5, *(step * (1 + 0.02 * rng.standard_normal(n - 1)))]


def _fit_run(batch_size: int | None, model_name: str = "my_model") -> RunResult:
    return compose_fit_run(
        _times(),
        model_name=model_name,
        device="GPU:0",
        device_name=A100,
        policy="mixed_float16",
        xla=False,
        batch_size=batch_size,
        env={"tensorflow": "2.21.0", "keras": "3.12.0"},
    )


def test_a_fit_run_stores_its_own_workload_and_config() -> None:
    run = _fit_run(256)
    assert run.status == "ok" and run.workload == "fit:my_model"
    assert run.config.workload == "fit:my_model" and run.config.model is None
    assert run.config.batch_size == 256 and run.config.precision == "mixed_float16"
    assert run.config.loop == "fit" and run.config.device == "GPU:0"
    assert run.config.seconds is None  # the user's fit set the length, not gpuscout
    assert run.env["device_name"] == A100
    assert run.samples_per_second is not None and run.step_time_s is not None
    assert run.samples_per_second.median == pytest.approx(256 / run.step_time_s.median)


def test_without_a_batch_size_no_samples_per_second_is_stored() -> None:
    run = _fit_run(None)
    assert run.status == "ok" and run.batch_size == 0 and run.config.batch_size is None
    assert run.samples_per_second is None and run.mean_samples_per_second is None
    assert any("no samples/s is stored" in a for a in run.assumptions)
    found = fit_rate(run)
    assert found is not None and run.step_time_s is not None
    rate, unit = found
    assert unit == "steps/s" and rate.median == pytest.approx(1 / run.step_time_s.median)
    assert rate.ci_low is not None and rate.ci_high is not None
    assert rate.ci_low <= rate.median <= rate.ci_high


def test_fit_runs_anchor_no_command_and_say_why() -> None:
    """A ScoutCallback run measured a model the store cannot trace: it anchors no command's
    prediction (only the callback's own, tests/measure/test_callback.py), and each says why
    once; a CPU run is no news. Predictions are the published fit's own."""
    catalog = load_catalog()
    runs = [
        _fit_run(256).model_copy(update={"id": 1}),
        _fit_run(None).model_copy(update={"id": 2}),
        _fit_run(256, "other").model_copy(update={"id": 3}),
        _fit_run(256).model_copy(update={"id": 4, "device": "CPU:0", "env": {}}),
    ]
    model = session(catalog, runs=runs)
    assert model.notes == [
        "not an anchor: your run 1 (it was timed by ScoutCallback inside model.fit: it anchors "
        "that callback's own prediction; for the others, measure the model with bench --model "
        "or predict it with --model)",
        "not an anchor: your run 2 (it measured steps/s only (no batch size given), not samples/s)",
        "not an anchor: your run 3 (it was timed by ScoutCallback inside model.fit: it anchors "
        "that callback's own prediction; for the others, measure the model with bench --model "
        "or predict it with --model)",
    ]  # run 4 ran on a CPU: nothing to say
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    assert not model.anchors(profile).anchored
    assert model.calibration == session(catalog, runs=[]).calibration


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A store holding a ScoutCallback run with a batch size and one without, on an A100."""
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save(_fit_run(256))
        store.save(_fit_run(None))
    return db


def test_predict_calibrate_and_report_go_through_planted_fit_runs(
    planted: Path, tmp_path: Path
) -> None:
    db = str(planted)
    predicted = run_cli(
        "predict", "--workload", "resnet50", "--precision", "mixed_float16", "--gpus",
        "a100-80gb-sxm", "--db", db, block_tf=True,
    )  # fmt: skip
    assert predicted.code == 0, predicted.err
    text = " ".join(predicted.out.split())
    assert "not an anchor: your run 1 (it was timed by ScoutCallback inside model.fit" in text
    assert "not an anchor: your run 2 (it measured steps/s only" in text

    calibrated = run_cli("calibrate", "--db", db, "--json", block_tf=True)
    assert calibrated.code == 0, calibrated.err
    out = calibrated.json()
    left_out = sorted(out["left_out"])
    assert len(left_out) == 2 and "your run 1 (it was timed by ScoutCallback" in left_out[0]
    assert all("your run" not in p["point"] for p in out["points"])
    calibrated_text = run_cli("calibrate", "--db", db, block_tf=True)
    assert calibrated_text.code == 0, calibrated_text.err
    assert "not an anchor: your run 2" in " ".join(calibrated_text.out.split())

    md = tmp_path / "report.md"
    reported = run_cli("report", "--md", str(md), "--db", db, block_tf=True)
    assert reported.code == 0, reported.err
    doc = " ".join(md.read_text().replace("\\", "").split())  # Markdown escapes undone
    assert "run 2 not ranked: no batch size was given, so it measured steps/s" in doc
    assert "timed by ScoutCallback in model.fit: the report predicts no GPUs for it" in doc
    assert "GPU:0 (run 1) | measured" in doc and "GPU:0 (run 2)" not in doc  # steps: no rank
    assert "one epoch = 0" not in doc and "epoch size not known" in doc
    assert "batch not given" in doc

    shown = run_cli("runs", "show", "2", "--db", db, block_tf=True)
    assert shown.code == 0, shown.err
    assert "not measured (no batch size given)" in shown.out and "steps/s" in shown.out
    assert "batch not given" in shown.out and "batch 0" not in shown.out
    compared = run_cli("runs", "compare", "1", "2", "--db", db, block_tf=True)
    assert compared.code == 0, compared.err
    assert "not measured (steps/s only)" in compared.out and "not given" in compared.out
    listed = run_cli("runs", "list", "--db", db, block_tf=True)
    assert listed.code == 0, listed.err
    row = next(x for x in listed.out.splitlines() if x.startswith("│ 2 "))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[3] == "fit:my_model" and cells[6:8] == ["-", "-"]  # batch, samples/s: none


def test_exports_of_a_steps_only_run_carry_no_samples_per_second() -> None:
    from gpuscout.publish.series import run_scalars

    names = {(s.group, s.name) for s in run_scalars(_fit_run(None))}
    assert ("step", "time_s") in names
    assert not any("samples_per_second" in name for _, name in names)
    with_batch = {(s.group, s.name) for s in run_scalars(_fit_run(256))}
    assert ("step", "samples_per_second") in with_batch


def test_a_fit_run_cannot_anchor_a_prediction_and_says_why(planted: Path) -> None:
    r = run_cli(
        "predict", "--workload", "resnet50", "--precision", "mixed_float16", "--from-run", "2",
        "--db", str(planted), block_tf=True,
    )  # fmt: skip
    assert r.code == 2 and "Traceback" not in r.err
    assert "run 2 cannot anchor this prediction: it was timed inside model.fit" in r.err


def test_a_run_of_executions_counts_steps_and_summarises_executions() -> None:
    """steps_per_execution=4 over epochs of 10 batches: one time per execution (4, 4, then 2
    steps). The run counts steps, stores one time per step (the execution's, shared), and its
    median, interval and warm-up are those of the executions' step times: 4 copies of one time
    are not 4 measurements. The steps/s printed without a batch size agrees."""
    from gpuscout.measure.stats import summarize

    rng = np.random.default_rng(0)
    steps = [4, 4, 2] * 40
    per_step = [1.5, *(0.02 * (1 + 0.02 * rng.standard_normal(len(steps) - 1)))]
    times = [t * n for t, n in zip(per_step, steps, strict=True)]
    kwargs: dict[str, Any] = {"model_name": "m", "device": "GPU:0", "device_name": A100,
              "policy": "float32", "xla": False, "env": {}}  # fmt: skip
    run = compose_fit_run(times, batch_size=64, steps=steps, steps_per_execution=4, **kwargs)
    bare = compose_fit_run(times, batch_size=None, steps=steps, steps_per_execution=4, **kwargs)
    assert run.status == "ok" and run.warmup is not None and run.step_time_s is not None
    assert run.measured_steps + run.warmup.steps == sum(steps) == 400 == len(run.step_times_s)
    assert sum(run.step_times_s) == pytest.approx(sum(times))
    assert run.warmup.steps == 4 and run.warmup.seconds == pytest.approx(1.5 * 4)  # 1 execution
    executions = summarize(per_step[1:])  # what the interval is over
    assert run.step_time_s.median == pytest.approx(executions.median)
    sps = run.samples_per_second
    assert sps is not None and sps.ci_low == pytest.approx(64 / executions.ci_high)
    assert run.mean_samples_per_second == pytest.approx(64 * 396 / sum(times[1:]))
    assert run.env["steps_per_execution"] == 4
    assert any("steps_per_execution = 4 was counted" in a for a in run.assumptions)
    found = fit_rate(bare)
    assert found is not None and found[1] == "steps/s"
    assert found[0].median == pytest.approx(1 / executions.median)
    assert found[0].ci_high == pytest.approx(1 / executions.ci_low)
    short = compose_fit_run(times[:2], batch_size=64, steps=steps[:2], steps_per_execution=4,
                            **kwargs)  # fmt: skip
    assert short.status == "error" and short.message == (
        "only 8 training steps in 2 executions: too few to measure"
    )
