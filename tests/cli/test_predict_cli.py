"""``gpuscout predict`` end to end: the articles' table, JSON, and bad input, with TensorFlow
blocked (the built-in workloads' profiles ship with the package)."""

from __future__ import annotations

import re
from pathlib import Path

from gpuscout.core.records import BenchConfig, Distribution, Interval, RunResult, Scaling
from gpuscout.store import Store
from tests.conftest import assert_user_errors, run_cli

ARTICLES = ("--workload", "resnet50", "--precision", "mixed_float16")
GPUS = ("--gpus", "3090,4090,a100-40gb,a100-80gb,h100-sxm", "--count", "1,4,8")


def test_the_articles_table() -> None:
    r = run_cli("predict", *ARTICLES, *GPUS, block_tf=True)
    assert r.code == 0, r.err
    for gpu in ("rtx-3090", "rtx-4090", "a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm"):
        assert gpu in r.out
    assert "NVLink" in r.out and "PCIe" in r.out and "assumption: fitted to" in r.out


def test_json_contract() -> None:
    r = run_cli("predict", *ARTICLES, *GPUS, "--json", block_tf=True)
    assert r.code == 0, r.err
    rows = r.json()
    assert len(rows) == 15
    keys = {"gpu", "count", "samples_per_second", "low", "high", "epoch_seconds"}
    keys |= {"relative_speed", "scaling_efficiency", "fits_memory", "method", "assumptions"}
    for row in rows:
        assert keys <= set(row)
        assert row["low"] <= row["samples_per_second"] <= row["high"]
        assert 0 < row["scaling_efficiency"] <= 1
    one = {row["gpu"]: row for row in rows if row["count"] == 1}
    assert one["rtx-3090"]["relative_speed"] == 1.0
    # physics, not marketing: an H100 is faster than a 4090, which beats a 3090
    h100, r4090, r3090 = (
        one[g]["samples_per_second"] for g in ("h100-sxm", "rtx-4090", "rtx-3090")
    )
    assert h100 > r4090 > r3090
    # ResNet-50 scales near-linearly over NVLink
    eight = next(r for r in rows if r["gpu"] == "a100-40gb-sxm" and r["count"] == 8)
    assert eight["scaling_efficiency"] > 0.9


def test_bad_input_is_one_line_exit_2() -> None:
    cases = [
        (("predict", "--workload", "resnet5"), "Did you mean 'resnet50'"),
        (("predict", "--workload", "resnet50", "--gpus", "rtx 4900"), "Did you mean 'rtx-4090'"),
        (("predict", "--workload", "resnet50", "--count", "0"), "a whole number at least 1"),
        (("predict", "--workload", "resnet50", "--count", "ax8"), "is not a GPU count"),
        (
            ("predict", "--workload", "resnet50", "--precision", "mixed_bfloat16", "--gpus", "t4"),
            "t4 has no BF16 tensor cores",
        ),
        (("predict", "--workload", "resnet50", "--from-run", "99"), "no results database at"),
    ]
    assert_user_errors(cases)


def test_your_own_model_then_again_without_tensorflow() -> None:
    """The first prediction traces the model (TensorFlow); the profile is cached, so the
    second runs with TensorFlow blocked."""
    model = f"{Path(__file__).parents[1] / 'data' / 'user_models.py'}:uncompiled_classifier"
    args = ("predict", "--model", model, "-b", "16", "--gpus", "4090,h100", "--json")
    first = run_cli(*args)
    assert first.code == 0, first.err
    again = run_cli(*args, block_tf=True)
    assert again.code == 0, again.err
    assert [r["samples_per_second"] for r in again.json()] == [
        r["samples_per_second"] for r in first.json()
    ]
    assert any("epoch = 1,000,000 samples" in a for a in first.json()[0]["common_assumptions"])


def test_nodes_by_gpus_cross_the_network() -> None:
    r = run_cli(
        "predict", "--workload", "bert-base", "--precision", "mixed_float16", "--gpus", "h100",
        "--count", "8,2x8", "--network", "400", "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    eight, sixteen = r.json()
    assert (eight["count"], sixteen["count"], sixteen["nodes"]) == (8, 16, 2)
    assert "400 Gb/s network" in sixteen["link"]
    assert sixteen["scaling_efficiency"] < eight["scaling_efficiency"]
    assert sixteen["samples_per_second"] > eight["samples_per_second"]


def test_calibrate_shows_the_fit() -> None:
    r = run_cli("calibrate", "--json", block_tf=True)
    assert r.code == 0, r.err
    out = r.json()
    eff = out["efficiency"]
    assert set(eff) == {"tensor", "step_s", "launch_s", "traffic", "scaling", "power_w", "relayout",
                        "forward_s"}  # fmt: skip
    assert len(eff["tensor"]) == 4
    assert all(0 < v <= 2 for v in eff["tensor"])  # x the kernel model's; the peak caps it
    assert eff["launch_s"] == 4e-6 and eff["step_s"] == 1e-3  # assumed: data/overheads.csv
    assert 1 / 1.5 - 1e-9 <= eff["traffic"] <= 1.5 + 1e-9
    assert all(0 <= a <= 1 for a in eff["scaling"])
    assert 0 <= eff["power_w"] <= 10
    assert len(out["points"]) >= 100
    low, high = out["out_of_sample"]["range"]
    assert low < 1 < high


def test_gpus_lacking_the_precision_are_predicted_and_marked_with_all() -> None:
    r = run_cli(
        "predict", "--workload", "mlp", "--precision", "mixed_bfloat16", "--gpus", "all",
        "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    t4 = next(row for row in r.json() if row["gpu"] == "t4")
    assert any("no BF16 tensor cores" in a for a in t4["assumptions"])


def _gpu_run(replicas: int, sps: float, efficiency: float | None) -> RunResult:
    """A stored ``bench --scaling`` run on an A100, as a GPU machine would have written it
    (this machine has no GPU: the record is written by hand, the store and predict are real)."""
    scaling = Scaling(
        sweep="s1",
        base_replicas=1,
        base_run_id=1 if efficiency else None,
        efficiency=Interval(median=efficiency, ci_low=None, ci_high=None) if efficiency else None,
    )
    return RunResult(
        created_at="2026-12-01T00:00:00+00:00",
        status="ok",
        workload="resnet50",
        device=",".join(f"GPU:{i}" for i in range(replicas)),
        precision="mixed_float16",
        xla=False,
        loop="custom",
        batch_size=256 * replicas,
        samples_per_second=Interval(median=sps, ci_low=None, ci_high=None),
        config=BenchConfig(workload="resnet50", devices=str(replicas)),
        env={"device_name": "NVIDIA A100-SXM4-40GB"},
        distribution=Distribution(
            strategy="MirroredStrategy",
            replicas=replicas,
            devices=[f"GPU:{i}" for i in range(replicas)],
            logical_devices=False,
            per_replica_batch=256,
            global_batch=256 * replicas,
            scaling=scaling,
        ),
    )


def test_measured_scaling_is_shown_next_to_the_predicted(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save(_gpu_run(1, 2500.0, None))
        store.save(_gpu_run(2, 4600.0, 0.92))
    args = ("predict", *ARTICLES, "--gpus", "a100-40gb-sxm", "--count", "1,2,4", "--db", str(db))
    r = run_cli(*args, "--json", block_tf=True)
    assert r.code == 0, r.err
    rows = {row["count"]: row for row in r.json()}
    assert rows[2]["measured_scaling"] == 0.92 and rows[2]["measured"] == 4600.0
    assert rows[1]["measured"] == 2500.0 and rows[1]["measured_scaling"] is None
    assert rows[4]["measured_scaling"] is None  # nothing measured on 4: prediction only
    text = run_cli(*args, block_tf=True)
    assert "measured scaling" in text.out and "92%" in text.out


def test_calibrate_says_which_rows_determine_each_parameter() -> None:
    """Issue 29: every fitted parameter with the rows that determine it and whether it sits on
    a bound; the assumed overheads with their reasons."""
    r = run_cli("calibrate", "--json", block_tf=True)
    assert r.code == 0, r.err
    out = r.json()
    params = {p["parameter"]: p for p in out["parameters"]}
    assert "tensor share, conv FP16/BF16" in params
    assert params["tensor share, conv FP16/BF16"]["rows"] >= 20
    assert any(name.startswith("DRAM traffic factor") for name in params)
    assert all("on_bound" in p and "gpus" in p for p in params.values())
    assert set(out["assumed"]) == {"launch_s", "train_step_s", "forward_call_s"}
    assert all(a["source"] for a in out["assumed"].values())
    assert out["out_of_sample"]["range_is"].startswith("resnet50's band of whole published")
    assert re.search(r"it covered \d+% of a source left out of the band too",
                     out["out_of_sample"]["range_is"])  # fmt: skip
    text = run_cli("calibrate", block_tf=True)
    assert "determined by" in text.out and "assumed launch_s" in text.out
