"""``bench --mode inference`` end to end on the CPU: real models served in-process and through
a loaded SavedModel, stored, listed, shown, and bad input refused before TensorFlow starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_user_errors, run_cli, run_in_process


def _one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep serves each point for a set time, so its CPU time is that time x TensorFlow's
    busy threads: one thread each (TensorFlow reads these in the measuring child) keeps what
    is tested, the points, their percentiles and the best one, at a fraction of the CPU beside
    the other test process. Nothing here asserts a speed."""
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "1")


def test_cnn_small_latency_table_best_point_and_runs_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's own command, on a short budget (1 s per point, the least a point gets);
    what reads the stored run back runs in this process (``runs`` and ``report`` without
    TensorFlow: tests/cli/test_cli.py and tests/report/ check it blocked)."""
    _one_thread(monkeypatch)
    r = run_cli("bench", "--workload", "cnn-small", "--mode", "inference", "--batch-sizes",
                "1,8,32", "--slo-ms", "50", "--seconds", "3")  # fmt: skip
    assert r.code == 0, r.err
    assert "gpuscout bench --mode inference · cnn-small" in r.out
    assert "p99 [95% CI]" in r.out and "p99 < 50 ms" in r.out
    listed = run_in_process("runs", "list")
    assert "cnn-small (inference)" in listed.out
    shown = run_in_process("runs", "show", "1", "--json", "--steps").json()
    points = shown["inference"]["points"]
    assert [p["batch_size"] for p in points] == [1, 8, 32]
    assert sum(p["requests"] for p in points) == len(shown["step_times_s"])  # raw samples kept
    for p in points:
        assert p["p50_s"]["median"] <= p["p90_s"]["median"] <= p["p99_s"]["median"]
        assert p["samples_per_second"] == pytest_approx(p["batch_size"] * p["requests_per_second"])
    assert shown["mode"] == "inference" and shown["loop"] == "inference"
    best = _shown_best(shown["inference"], 0.050)
    if best is None:
        assert "no point is shown to keep p99 under 50 ms" in r.out
    else:
        assert f"best operating point under p99 50 ms: batch {best['batch_size']}," in r.out
    md = tmp_path / "report.md"  # a report of inference runs only: their table, no ranking
    reported = run_in_process("report", "--md", str(md))
    assert reported.code == 0, reported.err
    text = md.read_text()
    assert "## Inference latency (measured)" in text and "| tf.function" in text
    # the measured ranking predicts no GPU rows for inference runs; the job the report prices
    # (an assumed training job, said) has its own predicted section before it
    ranking = text.split("## Ranking", 1)[1].split("\n## ", 1)[0]
    assert "(predicted)" not in ranking
    assert "assumed: the articles' benchmark" in text


def _shown_best(inf: dict[str, Any], slo_s: float) -> dict[str, Any] | None:
    """The best point, checked against the measured intervals rather than a speed assumed
    here: a point meets the SLO exactly when its p99's upper bound is under it, and the best
    is the most samples/s of those (None when none is shown to meet it)."""
    for p in inf["points"]:
        high = p["p99_s"]["ci_high"]
        assert p["meets_slo"] is (high is not None and high <= slo_s), p
    meeting = [i for i, p in enumerate(inf["points"]) if p["meets_slo"]]
    if not meeting:
        assert inf["best"] is None
        return None
    rates = [inf["points"][i]["samples_per_second"] for i in meeting]
    assert inf["points"][inf["best"]]["samples_per_second"] == max(rates)
    return dict(inf["points"][inf["best"]])


def pytest_approx(value: float) -> object:
    return pytest.approx(value, rel=1e-9)


def test_mlp_through_a_saved_model_beside_the_function_with_a_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every point of the grid, in its order (8 points at the least a point gets, 1 s). The
    command runs in this process, its measuring child (which serves the model) a real one."""
    _one_thread(monkeypatch)
    r = run_in_process(
        "bench", "--workload", "mlp", "--mode", "inference", "--batch-sizes", "1,16",
        "--concurrency", "1,2", "--serving", "both", "--seconds", "4", "--slo-ms", "100",
        "--rate", "1000000", "--json", stderr_file=True)  # fmt: skip
    assert r.code == 0, r.err
    inf = r.json()["inference"]
    assert [(p["path"], p["batch_size"], p["concurrency"]) for p in inf["points"]] == [
        (path, b, c) for path in ("tf.function", "saved_model") for b in (1, 16) for c in (1, 2)
    ]
    best = _shown_best(inf, 0.100)
    if best is None:  # nothing shown to meet 100 ms: no point to size devices at
        assert inf["devices_needed"] is None
    else:
        assert inf["devices_needed"] == -(-1_000_000 // best["samples_per_second"])


def test_predict_inference_uses_the_forward_pass_and_says_so() -> None:
    """In this process: a profile not cached yet is traced with TensorFlow, which the test
    process has imported already (a fresh interpreter paid its start for each command)."""
    r = run_in_process("predict", "--workload", "mlp", "--mode", "inference", "--batch-size",
                       "4", "--gpus", "rtx-4090,h100-sxm", "--json")  # fmt: skip
    assert r.code == 0, r.err
    rows = r.json()
    assert [row["gpu"] for row in rows] == ["rtx-4090", "h100-sxm"]
    for row in rows:
        assert row["mode"] == "inference" and row["count"] == 1
        assert row["latency_s"] == pytest_approx(4 / row["samples_per_second"])
        assert any("forward pass" in a for a in row["common_assumptions"])
    train = run_in_process("predict", "--workload", "mlp", "--batch-size", "4", "--gpus",
                           "h100-sxm", "--json")  # fmt: skip
    assert train.code == 0, train.err  # a training step costs more than a forward pass
    assert train.json()[0]["samples_per_second"] < rows[1]["samples_per_second"]


def test_inference_bad_input_is_one_line() -> None:
    inference = ("bench", "--mode", "inference")
    assert_user_errors(
        [
            ((*inference, "--slo-ms", "0"), "must be above 0 and at most 3.6e+06, got 0"),
            ((*inference, "--slo-ms", "-5"), "must be above 0 and at most 3.6e+06, got -5"),
            ((*inference, "--batch-sizes", ","), "names no sizes"),
            ((*inference, "--batch-sizes", "0,8"), "--batch-sizes"),
            ((*inference, "--batch-size", "8"), "--mode inference does not take --batch-size"),
            ((*inference, "--devices", "2"), "--mode inference does not take --devices"),
            ((*inference, "--scaling", "1,2"), "--mode inference does not take --scaling"),
            (("bench", "--slo-ms", "50"), "--slo-ms measure serving latency, not training"),
            (
                ("predict", "--workload", "mlp", "--mode", "inference", "--count", "2"),
                "--mode inference predicts one GPU",
            ),
        ]
    )
