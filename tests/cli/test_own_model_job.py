"""Your own model, end to end through ``advise`` and ``cost`` (issue 30): the job as epochs x
dataset size, steps or a stored run's set-up, one answer from both commands, and the mistakes
a new user makes refused in one line.

The three example models (a CNN, a BiLSTM, a small transformer) are traced for real with
TensorFlow the first time; the profile is cached, so ``cost`` afterwards runs with TensorFlow
blocked, as a command that does not measure must. ``advise`` traces in this process (the test
process has TensorFlow imported already, by the tests that use Keras): the three models then
share one TensorFlow start instead of paying one each in a fresh interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.records import BenchConfig, Interval, RunResult
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.store import Store
from tests.conftest import assert_user_errors, run_cli, run_in_process

EXAMPLES = Path(__file__).parents[2] / "examples" / "models"
JOB = ("--samples", "1200000", "--epochs", "50")


def model(name: str) -> str:
    return f"{EXAMPLES / name}.py:build"


@pytest.mark.parametrize("name", ["cnn", "lstm", "transformer"])
def test_advise_then_cost_price_your_model_alike(name: str) -> None:
    spec = model(name)
    r = run_in_process("advise", "--model", spec, *JOB, "--deadline", "48h", "--budget", "2000",
                       "--json")  # fmt: skip
    assert r.code == 0, r.err
    advice = r.json()
    assert advice["ranked"], advice["rejected"]
    for option in advice["ranked"]:
        assert option["hours"] > 0 and option["total_usd"] > 0
        assert option["samples_per_second"] > 0
    said = " ".join(advice["assumptions"])
    assert f"50 epochs x 1,200,000 samples of your model {spec}" in said
    assert "batch 32 for your model, gpuscout's default" in said
    assert "a global batch of 32 samples per optimizer step" in said
    # the same job priced by cost, TensorFlow blocked: the traced step was cached
    first = advice["ranked"][0]
    option = f"{first['gpu']}x{first['count']}@{first['provider']}"
    c = run_cli("cost", "--model", spec, *JOB, "--option", option, "--json", block_tf=True)
    assert c.code == 0, c.err
    priced = c.json()
    assert priced["assumptions"]["job"].startswith(
        f"50 epochs x 1,200,000 samples of your model {spec}"
    )
    (line,) = priced["options"]
    # one question, one number: the same wall time from both commands (advise's time holds
    # the expected rework after failures, which cost shows apart)
    assert line["hours"] + line["rework_hours"] == pytest.approx(first["hours"], rel=1e-9)


def test_the_job_size_in_each_of_its_forms() -> None:
    catalog = load_catalog()
    steps = resolve_job(JobSpec(workload="mlp", steps=1000, batch_size=64), catalog)
    assert steps.samples == 64_000 and "1,000 steps x 64" in steps.label
    epochs = resolve_job(JobSpec(workload="resnet50", epochs=2), catalog)
    assert epochs.samples == 2 * 1_281_167 and epochs.unit == "images"
    both = resolve_job(JobSpec(workload="resnet50", epochs=2, samples=1000), catalog)
    assert both.samples == 2000  # --samples with --epochs: the dataset's size
    alone = resolve_job(JobSpec(workload="resnet50", samples=1000), catalog)
    assert alone.samples == 1000  # --samples alone: the whole job


def test_a_stored_runs_set_up_is_the_job(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    run = RunResult(
        created_at="2026-12-06T00:00:00Z", status="ok", workload="resnet50",
        device="NVIDIA GeForce RTX 4090", precision="mixed_float16", xla=False, loop="custom",
        batch_size=64, samples_per_second=Interval(median=1300.0, ci_low=1290.0,
                                                   ci_high=1310.0),
        config=BenchConfig(workload="resnet50", precision="mixed_float16", batch_size=64),
        env={"device_name": "NVIDIA GeForce RTX 4090"},
    )  # fmt: skip
    with Store(str(db)) as store:
        saved = store.save(run)
    r = run_cli("advise", "--from-run", str(saved.id), "--epochs", "1", "--db", str(db),
                "--json", block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    said = " ".join(r.json()["assumptions"])
    assert f"stored run {saved.id}: resnet50, batch 64 per GPU, mixed_float16" in said


def test_what_a_new_user_gets_wrong_is_one_line() -> None:
    cnn = model("cnn")
    cases = [
        (("advise", "--model", cnn, "--epochs", "50"), "its dataset size is unknown"),
        (("advise", "--workload", "resnet50", "--steps", "10", "--epochs", "1"),
         "--steps is a whole job by itself"),
        (("advise", "--workload", "resnet50", "--model", cnn, "--epochs", "1"),
         "got --workload and --model"),
        (("advise", "--workload", "resnet50"), "the job needs its size"),
        (("cost", "--model", cnn, "--gpu-hours", "10", "--epochs", "1"), "say what the job is"),
        (("advise", "--model", "missing.py:build", "--samples", "10"), "missing.py"),
        (("advise", "--from-run", "7", "--epochs", "1"), "no results database"),
    ]  # fmt: skip
    assert_user_errors(cases)


def test_the_presets_help_says_what_each_preset_sets() -> None:
    """advise's --preset help is written out (importing the presets would slow every
    command's start): it must say what advise.recommend.PRESETS does."""
    from gpuscout.advise.recommend import PRESETS
    from gpuscout.cli.advise import PRESET_WORDS

    assert set(PRESET_WORDS) == set(PRESETS)
    for name, preset in PRESETS.items():
        words = PRESET_WORDS[name]
        assert words.startswith(preset["objective"])
        assert ("owned GPUs considered" in words) == preset["owned"]
        assert all(feature in words for feature in preset["require"])


def test_the_cli_objectives_are_advises_and_its_default_is_advises() -> None:
    """The CLI lists the objectives without importing advise (start-up time): the same
    names, and the default first, as ``advise.ties`` has them."""
    from typing import get_args

    from gpuscout.advise.ties import DEFAULT_OBJECTIVE, OBJECTIVE_WORDS, Objective
    from gpuscout.cli.job_args import DEFAULT_OBJECTIVE as CLI_DEFAULT
    from gpuscout.cli.job_args import OBJECTIVES

    assert set(OBJECTIVES) == set(get_args(Objective)) == set(OBJECTIVE_WORDS)
    assert CLI_DEFAULT == DEFAULT_OBJECTIVE == "cheapest"


@pytest.mark.parametrize("command", ["bench", "predict", "advise", "cost", "scout"])
def test_a_misspelt_builder_is_refused_before_any_backend_loads(command: str) -> None:
    """The file is read, not run: with TensorFlow and JAX blocked the refusal is the same line
    (it used to come after seconds of TensorFlow import). A name bound by an assignment or an
    import counts as defined."""
    spec = f"{EXAMPLES / 'cnn.py'}:buld"
    size = () if command in ("bench", "predict") else ("--samples", "1000")
    r = run_cli(command, "--model", spec, *size, block_tf=True)
    assert r.code == 2, r.err
    assert "has no function 'buld' (it has: build)" in r.err and "Traceback" not in r.err


def test_a_builder_bound_without_def_is_not_refused(tmp_path: Path) -> None:
    from gpuscout.measure.user_spec import parse_function_spec

    (tmp_path / "m.py").write_text("from os.path import join as built\nmade = lambda: None\n")
    for name in ("built", "made"):
        assert parse_function_spec(f"{tmp_path / 'm.py'}:{name}", "--model").function == name
    (tmp_path / "star.py").write_text("from os.path import *\n")
    assert parse_function_spec(f"{tmp_path / 'star.py'}:anything", "--model")
