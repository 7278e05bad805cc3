"""One prediction for one question (issue 29, item 5; issue 41): with a GPU run in the store,
``predict``, ``advise``, ``cost`` and ``report`` print the same speed for the same GPU, workload,
batch and precision: the measured A100 its measurement, the H100 that times the model's ratio;
each says which run anchors it; ``--from-run`` and the automatic anchor agree; ``cost`` scales
several GPUs as ``predict``'s fitted scaling model does.

Before, the run was one point among 143 in the fit, its stack factor on a bound: with one A100
ResNet-50 run at 2,500 images/s stored, every command priced that very A100 at 1,390. Earlier
still, ``advise`` and ``cost`` ignored the run (2,492 against 1,521). This machine has no GPU:
the run is written as a GPU machine would store it; the store and the commands are real.

``predict``, the number every other command is held to, runs in a fresh interpreter with
TensorFlow blocked; the others run in this process (a stored run makes each command refit the
calibration, which a process keeps: a fresh interpreter apiece paid the start and the fit each
time). That they run without TensorFlow is checked with it blocked in the last test here, and
by test_cost_cli.py, test_advise_cli.py, tests/report/ and tests/predict/test_fit_runs.py.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.records import BenchConfig, Interval, RunResult
from gpuscout.core.units import fmt_rate
from gpuscout.store import Store
from tests.conftest import run_cli, run_in_process

GPUS = ("a100-40gb-sxm", "h100-sxm")
JOB = ("--workload", "resnet50", "--precision", "mixed_float16")
ANCHORED = "anchored on your stored run 1: a100-40gb-sxm: 2,500/s at batch 256"


def _a100_run(samples_per_second: float = 2_500.0) -> RunResult:
    """``bench --workload resnet50 --precision mixed_float16`` on an A100 40GB, as stored."""
    sps = samples_per_second
    return RunResult(
        created_at="2026-12-01T00:00:00+00:00",
        status="ok",
        workload="resnet50",
        device="GPU:0",
        precision="mixed_float16",
        xla=False,
        loop="custom",
        batch_size=256,
        samples_per_second=Interval(median=sps, ci_low=sps * 0.99, ci_high=sps * 1.01),
        config=BenchConfig(workload="resnet50", precision="mixed_float16"),
        env={"device_name": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0"},
    )


@pytest.fixture
def stored() -> Path:
    """The default results database (GPUSCOUT_DB, this test's own) holding the one run: no
    command is told where it is, as a user's are not."""
    db = Path(os.environ["GPUSCOUT_DB"])
    with Store(db) as store:
        assert store.save(_a100_run()).id == 1
    return db


def _predicted(*more: str) -> tuple[dict[str, float], list[str]]:
    """``predict``'s samples/s per GPU, and its common assumptions."""
    r = run_cli("predict", *JOB, "--gpus", ",".join(GPUS), "--json", *more, block_tf=True)
    assert r.code == 0, r.err
    rows = r.json()
    return {row["gpu"]: row["samples_per_second"] for row in rows}, rows[0]["common_assumptions"]


def _report_rows(text: str, predicted: dict[str, float], gpus: tuple[str, ...] = GPUS) -> None:
    """The report's ranking shows each GPU's figure; the measured one says so."""
    catalog = load_catalog()
    for gpu in gpus:
        how = ("measured", " (measured by your run 1)") if gpu == GPUS[0] else ("predicted", "")
        row = f"| {catalog.gpus[gpu].name} | {how[0]} | mixed_float16, batch 256{how[1]} | "
        assert f"{row}{fmt_rate(predicted[gpu])} |" in text, gpu


def test_every_command_gives_the_same_speed_and_says_which_run_anchors_it(
    stored: Path, tmp_path: Path
) -> None:
    predicted, notes = _predicted()
    assert predicted[GPUS[0]] == 2_500.0  # measured, not the model's 1,390
    assert _predicted("--from-run", "1")[0] == predicted  # the automatic anchor is --from-run's

    advised = run_in_process(
        "advise", "--workload", "resnet50", "--epochs", "90", "--counts", "1", "--top", "1000",
        "--json",
    )  # fmt: skip
    assert advised.code == 0, advised.err
    advice = advised.json()
    for gpu in GPUS:
        option = next(c for c in advice["ranked"] if c["gpu"] == gpu and c["count"] == 1)
        assert option["samples_per_second"] == pytest.approx(predicted[gpu], rel=1e-9), gpu
        measured = "(measured by your run 1)" in " ".join(option["reasons"])
        assert measured == (gpu == GPUS[0]), option["reasons"]  # measured beside predicted

    options = [f"--option={gpu}" for gpu in GPUS]
    priced = run_in_process(
        "cost", "--workload", "resnet50", "--epochs", "90", *options, "--reference", GPUS[0],
        "--json",
    )  # fmt: skip
    assert priced.code == 0, priced.err
    cost = priced.json()
    job = cost["assumptions"]["job"]
    assert f"on one {GPUS[0]} (predicted {fmt_rate(predicted[GPUS[0]])}/s at batch" in job
    for gpu in GPUS:
        (line,) = [o for o in cost["options"] if o["gpu"] == gpu]
        how = "measured" if gpu == GPUS[0] else "predicted"
        assert f"{how} {fmt_rate(predicted[gpu])} images/s" in line["notes"], line["notes"]
        assert line["speedup"] == pytest.approx(predicted[gpu] / predicted[GPUS[0]], rel=1e-9)

    md = tmp_path / "report.md"
    reported = run_in_process("report", "--md", str(md))
    assert reported.code == 0, reported.err
    text = md.read_text().replace("\\", "")  # Markdown's escapes
    _report_rows(text, predicted)

    # and each says which run anchors it
    assert any(n.startswith(ANCHORED) for n in notes), notes
    assert any(ANCHORED in a for a in advice["assumptions"])
    assert ANCHORED in cost["assumptions"]["predictions"]
    assert ANCHORED in text
    # audit judges a claimed ratio on the same two speeds
    audited = run_in_process("audit", "--claim", f"{GPUS[1]}=1.9x {GPUS[0]}", "--workload",
                             "resnet50", "--json")  # fmt: skip
    assert audited.code == 0, audited.err
    (verdict,) = audited.json()["verdicts"]
    (mixed,) = [s for s in verdict["settings"] if s["setting"] == "mixed_float16"]
    assert mixed["samples_per_second"] == pytest.approx(predicted, rel=1e-9)
    # SkyPilot's time estimator too, pinned on the job's run as cost is
    estimated = run_in_process("cloud", "estimator", "--from-run", "1", "--epochs", "1", "--json")
    assert estimated.code == 0, estimated.err
    (a100,) = [e for e in estimated.json() if e["gpu"] == GPUS[0]]
    assert a100["seconds"] == math.ceil(1_281_167 / 2_500.0)
    # --stack sits beside a report's job, not in its exclusive group
    md = tmp_path / "stack.md"
    stacked = run_in_process("report", "--job", "resnet50", "--stack", "pytorch", "--md", str(md))
    assert stacked.code == 0, stacked.err
    assert "the model's ratios are the pytorch stack's" in md.read_text().replace("\\", "")
    # the job commands' --from-run anchors the same way
    again = run_in_process("advise", "--from-run", "1", "--epochs", "90", "--counts", "1",
                           "--top", "1000", "--json")  # fmt: skip
    assert again.code == 0, again.err
    for gpu in GPUS:
        option = next(c for c in again.json()["ranked"] if c["gpu"] == gpu and c["count"] == 1)
        assert option["samples_per_second"] == pytest.approx(predicted[gpu], rel=1e-9), gpu


def test_calibrate_and_a_report_on_other_runs_say_which_runs_anchor(
    stored: Path, tmp_path: Path
) -> None:
    """The anchors are the store's, whichever runs a report shows: a report on a CPU run alone
    predicts the GPUs as ``predict`` does, and says which stored run anchors it."""
    from tests.report.runs import _run

    with Store(stored) as store:
        assert store.save(_run(workload="resnet50", epoch_samples=1_281_167)).id == 2
    predicted, _ = _predicted()
    md = tmp_path / "cpu.md"
    reported = run_in_process("report", "--runs", "2", "--md", str(md))
    assert reported.code == 0, reported.err
    text = md.read_text().replace("\\", "")
    _report_rows(text, predicted)
    assert ANCHORED in text
    shown = run_in_process("calibrate", "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["stored_runs"] == [1]
    text = run_in_process("calibrate")
    assert "your stored GPU runs 1 anchor predictions" in " ".join(text.out.split())


def test_cost_scales_several_gpus_as_predict_does() -> None:
    """Eight GPUs: cost's efficiency is predict's fitted scaling model's, on the job's step or,
    for a job in GPU-hours, on the articles' benchmark step (ResNet-50, mixed precision, batch
    256); no 90 % NVLink / 75 % PCIe guess (8 x RTX 4090: about 91 %, not 75 %)."""
    gpus = ("rtx-4090", "a100-40gb-sxm", "h100-sxm")
    r = run_cli("predict", *JOB, "--gpus", ",".join(gpus), "--count", "8", "--json", block_tf=True)
    assert r.code == 0, r.err
    efficiency = {row["gpu"]: row["scaling_efficiency"] for row in r.json()}
    assert efficiency["rtx-4090"] > 0.8  # the guess said 0.75

    options = [f"--option={gpu}x8" for gpu in gpus]
    # -b 256: each GPU at the batch predict predicts (cost's default splits one global batch
    # over the GPUs, as advise does: the test below)
    for job in (("--gpu-hours", "1000"), ("--workload", "resnet50", "--epochs", "1", "-b", "256")):
        priced = run_in_process("cost", *job, *options, "--json")
        assert priced.code == 0, priced.err
        out = priced.json()
        for gpu in gpus:
            (line,) = [o for o in out["options"] if o["gpu"] == gpu]
            assert line["scaling_efficiency"] == pytest.approx(efficiency[gpu], rel=1e-9), job
            assert any("fitted scaling model" in n for n in line["notes"]), line["notes"]
        assert "predict's fitted scaling model" in out["assumptions"]["scaling"]
    shown = run_in_process("cost", "--gpu-hours", "1000", "--option", "4090x8")
    assert shown.code == 0, shown.err
    assert "fitted scaling model" in shown.out and "assumed (PCIe)" not in shown.out


def test_cost_and_advise_split_one_global_batch_the_same_way() -> None:
    """Issue 42's leftover: 8 RTX 4090s for 10 epochs of ResNet-50 were 11,100 images/s in
    cost (256 per GPU, a global batch of 2,048) and 4,940 in advise (the job's 256 split over 8
    GPUs). Both now split the job's global batch, or the one given, the same way."""
    job = ("--workload", "resnet50", "--epochs", "10")
    for extra in ((), ("--global-batch", "1024")):
        advised = run_in_process("advise", *job, *extra, "--gpus", "rtx-4090", "--counts", "8",
                                 "--provider", "runpod", "--json")  # fmt: skip
        assert advised.code == 0, advised.err
        (option,) = [o for o in advised.json()["ranked"] if o["count"] == 8]
        priced = run_in_process("cost", *job, *extra, "--option", "rtx-4090x8@runpod", "--json")
        assert priced.code == 0, priced.err
        (line,) = priced.json()["options"]
        notes = " ".join(line["notes"])
        rate = option["samples_per_second"]
        assert f"predicted {fmt_rate(rate)} images/s" in notes, (notes, rate)
        per_gpu = 32 if not extra else 128
        assert f"batch {per_gpu} per GPU (global {8 * per_gpu:,})" in notes


def test_advise_and_cost_say_how_far_off_their_predictions_may_be() -> None:
    """Issue 29: a time or a price from a prediction comes with the range of the split that
    matches the situation, as predict's does (no stored runs here: whole sources left out)."""
    from gpuscout.predict.out_of_sample import shipped

    low, high = shipped().source_absolute["resnet50"]
    said = f"each predicted speed may be off by x{low:.2f} to x{high:.2f}"
    advice = run_cli("advise", "--workload", "resnet50", "--epochs", "1", "--json", block_tf=True)
    assert advice.code == 0, advice.err
    assert any(said in n and "whole published sources" in n
               for n in advice.json()["assumptions"])  # fmt: skip
    cost = run_cli("cost", "--workload", "resnet50", "--epochs", "1", "--option", "h100x8@aws",
                   "--json", block_tf=True)  # fmt: skip
    assert cost.code == 0, cost.err
    assert said in cost.json()["assumptions"]["predictions"]
