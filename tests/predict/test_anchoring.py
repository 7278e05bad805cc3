"""Anchoring's edges (issue 41's review): which stored runs anchor a step and what is said of
those that do not. Real catalog, shipped fit and profiles, runs as a GPU machine stores them
(this machine has no GPU), real model files."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, Interval, RunResult
from gpuscout.measure.environment import hash_parts
from gpuscout.predict.anchoring import step_matches
from gpuscout.predict.predictor import runs_said
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.session import Session, session
from tests.cli.test_one_prediction import _a100_run

V100 = "Tesla V100-SXM2-32GB"


def _profile(batch: int = 256, precision: str = "mixed_float16") -> Profile:
    found = cached("resnet50", {}, batch, precision)
    assert found is not None
    return found


def _run(run_id: int, sps: float, **update: object) -> RunResult:
    return _a100_run(sps).model_copy(update={"id": run_id, **update})


def test_a_run_at_another_batch_anchors_at_its_own_and_the_nearest_batch_wins() -> None:
    cat = load_catalog()
    model = session(cat, runs=[_run(1, 2_500.0, batch_size=128), _run(2, 2_400.0, batch_size=512)])
    found = model.anchors(_profile(256))
    (measured,) = found.on.values()
    assert measured.batch == 128 and measured.run_ids == (1,)  # log-nearest to 256, then smaller
    assert any("your run 2 on a100-40gb-sxm (at another batch than 128" in n for n in found.notes)
    rows, notes = model.predict(_profile(256), [cat.gpus["a100-40gb-sxm"]])
    assert rows[0].method.startswith("your measured run")  # modelled from it, not the run's own
    assert any("a GPU measured at another batch is modelled at batch 256" in n for n in notes)


def test_without_an_interval_the_range_says_so() -> None:
    bare = _run(1, 2_500.0, samples_per_second=Interval(median=2_500.0, ci_low=None,
                                                         ci_high=None))  # fmt: skip
    model = session(load_catalog(), runs=[bare])
    rows, notes = model.predict(_profile(), [model.catalog.gpus["a100-40gb-sxm"]])
    assert (rows[0].low, rows[0].high) == (2_500.0, 2_500.0)
    assert any("too few steps for one: the measurement alone" in n for n in notes)


def test_tf32_only_matters_on_a_gpu_with_tf32_units() -> None:
    """A V100 has no TF32 units: an fp32 run measured with TF32 on anchors a --no-tf32
    prediction (the switch changed nothing there); an A100 run does not."""
    cat = load_catalog()
    config = BenchConfig(workload="resnet50", precision="fp32", tf32=True)
    v100 = _run(1, 400.0, precision="fp32", config=config,
                env={"device_name": V100, "tf32_enabled": True})  # fmt: skip
    a100 = _run(2, 900.0, precision="fp32", config=config,
                env={"device_name": "NVIDIA A100-SXM4-40GB", "tf32_enabled": True})  # fmt: skip
    found = session(cat, runs=[v100, a100]).anchors(_profile(precision="fp32"), tf32=False)
    assert list(found.on) == ["v100-sxm2-32gb"]
    assert any("your run 2 (it ran with TF32 on" in n for n in found.notes)


def test_your_model_anchors_only_while_its_file_is_the_one_measured(tmp_path: Path) -> None:
    src = tmp_path / "net.py"
    src.write_text("def build():\n    return None\n")
    spec = f"{src}:build"
    measured = hash_parts(src.read_bytes(), spec)
    run = _run(1, 900.0, workload="custom", config=BenchConfig(model=spec,
               precision="mixed_float16"), env={"device_name": "NVIDIA A100-SXM4-40GB",
               "workload_hash": measured})  # fmt: skip
    profile = _profile().model_copy(update={"workload": f"model:{spec}:0123456789ab"})
    assert step_matches(run, profile) is None
    src.write_text("def build():\n    return 1\n")  # edited since it was measured
    assert "has changed since it was measured" in (step_matches(run, profile) or "")
    older = run.model_copy(update={"env": {"device_name": "NVIDIA A100-SXM4-40GB"}})
    assert step_matches(older, profile) is None  # stored before runs kept the hash


def test_disagreeing_gpus_are_said_and_ids_are_bounded() -> None:
    cat = load_catalog()
    h100 = _run(2, 9_000.0, env={"device_name": "NVIDIA H100 80GB HBM3"})
    model = session(cat, runs=[_run(1, 1_200.0), h100])
    _, notes = model.predict(_profile(), [cat.gpus["l4"]])
    assert any("the measured GPUs' ratios to the model differ by" in n for n in notes), notes
    assert runs_said(list(range(1, 14))) == "runs 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 3 more"
    assert runs_said([]) == "this run" and runs_said([4], stored=True) == "your stored run 4"


def test_job_commands_say_why_a_run_of_the_step_does_not_anchor() -> None:
    """advise, cost and report print ``Session.describe``: the runs of the step left out are
    in it (before, only predict printed them)."""
    cat = load_catalog()
    bogus = _run(1, 2_500_000.0)
    line = session(cat, runs=[bogus]).describe(_profile())
    assert "not an anchor: your run 1 (it measured 2.5e+06 samples/s" in line
    assert "software stack: tf" in line
    fp32 = _run(2, 900.0, precision="fp32", config=BenchConfig(workload="resnet50",
                precision="fp32"))  # fmt: skip
    fit = session(cat).calibration  # pinned as --from-run pins it, without a store
    model = Session(cat, fit, (fp32,), pinned=fp32, strict=False)  # advise --from-run 2
    assert "not an anchor: the job's run 2 (it measured fp32, the job asks mixed_float16)" in (
        model.describe(_profile())
    )
    strict = Session(cat, fit, (fp32,), pinned=fp32)  # predict --from-run 2
    with pytest.raises(UserError, match="run 2 cannot anchor this prediction: it measured fp32"):
        strict.anchors(_profile())
