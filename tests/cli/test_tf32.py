"""TF32 on or off (``--no-tf32``): measured, recorded, predicted and compared.

TensorFlow runs float32 matmuls on TF32 tensor cores on Ampere and newer GPUs by default;
``--no-tf32`` runs them in float32 on CUDA cores, as PyTorch does by default. The measuring
test runs real TensorFlow on a CPU, where the switch changes nothing but is still set, read
back and recorded; the prediction tests need no TensorFlow (the profiles ship).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuscout.core.comparison import compare
from gpuscout.core.records import BenchConfig, Interval, RunResult
from gpuscout.core.run_settings import TF32_OFF, TF32_ON, tf32_prediction_note, tf32_run_note
from gpuscout.store import Store
from tests.conftest import run_cli, run_in_process

FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8")
A100 = "NVIDIA A100-SXM4-40GB"


def test_bench_no_tf32_switches_tensorflow_off_and_stores_it(tmp_path: Path) -> None:
    """The child sets TensorFlow's switch before building the model and the run's env holds
    the switch as read back from TensorFlow, not the flag: a child that ignored --no-tf32
    would store tf32_enabled true. On a CPU it changes nothing, and the run says so."""
    db = tmp_path / "runs.sqlite"
    r = run_cli("bench", "-w", "mlp", "--no-tf32", "--db", str(db), "--json", *FAST)
    assert r.code == 0, r.err
    out = r.json()
    assert out["status"] == "ok"
    assert out["config"]["tf32"] is False
    assert out["env"]["tf32_enabled"] is False  # read back from TensorFlow in the child
    assert out["env"]["tf32"] is False  # in effect: never on a CPU
    said = [a for a in out["assumptions"] if "tf32" in a.lower()]
    assert said == ["--no-tf32 changes nothing on a CPU (TF32 is a GPU tensor-core mode); recorded"]
    with Store(db, readonly=True) as store:
        stored = store.get(out["id"])
    assert stored.config.tf32 is False and stored.env["tf32_enabled"] is False


def test_the_flag_is_in_help() -> None:
    for command in ("bench", "predict"):
        r = run_in_process(command, "--help")
        assert r.code == 0 and "--no-tf32" in r.out, r.out


def _predict(*args: str) -> list[dict[str, Any]]:
    r = run_in_process("predict", "--workload", "resnet50", *args, "--json")
    assert r.code == 0, r.err
    rows: list[dict[str, Any]] = r.json()
    return rows


def test_predict_no_tf32_is_slower_for_fp32_on_an_a100_only() -> None:
    """FP32 on CUDA cores (19.5 TFLOP/s on an A100) instead of TF32 tensor cores (156): the
    fp32 prediction drops on the A100; a V100 has no TF32 to lose; mixed precision's matmuls
    are FP16 either way. Predictions compared, not wall clocks."""
    gpus = ("--gpus", "a100-40gb-sxm,v100-sxm2-32gb", "--precision", "fp32")
    on = {row["gpu"]: row for row in _predict(*gpus)}
    off = {row["gpu"]: row for row in _predict(*gpus, "--no-tf32")}
    assert off["a100-40gb-sxm"]["samples_per_second"] < on["a100-40gb-sxm"]["samples_per_second"]
    assert off["v100-sxm2-32gb"]["samples_per_second"] == on["v100-sxm2-32gb"]["samples_per_second"]
    assert on["a100-40gb-sxm"]["tf32"] is True and off["a100-40gb-sxm"]["tf32"] is False
    assert TF32_ON in on["a100-40gb-sxm"]["common_assumptions"]
    assert TF32_OFF in off["a100-40gb-sxm"]["common_assumptions"]
    mixed = ("--precision", "mixed_float16", "--gpus", "a100-40gb-sxm")
    m_on, m_off = _predict(*mixed)[0], _predict(*mixed, "--no-tf32")[0]
    assert m_off["samples_per_second"] == m_on["samples_per_second"]
    assert any("changes nothing for the matmuls" in n for n in m_off["common_assumptions"])
    assert TF32_ON not in m_on["common_assumptions"]
    assert TF32_OFF not in m_on["common_assumptions"]


def test_predict_prints_the_assumption() -> None:
    r = run_in_process(
        "predict", "--workload", "mlp", "--gpus", "a100-40gb-sxm", "--no-tf32", "--precision",
        "fp32",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert f"assumption: {TF32_OFF}" in r.out


def _a100_run(tf32: bool | None, precision: str = "fp32") -> RunResult:
    """A stored resnet50 run on an A100, as a GPU machine would have written it (this machine
    has no GPU; the store and predict are real). ``tf32`` None: a run stored before the
    setting existed (no config field, no tf32_enabled)."""
    env: dict[str, Any] = {"device_name": A100, "compute_capability": "8.0", "tensorflow": "2"}
    config: dict[str, Any] = {"workload": "resnet50", "precision": precision}
    if tf32 is not None:
        env["tf32_enabled"] = tf32
        config["tf32"] = tf32
    return RunResult(
        created_at="2026-12-01T00:00:00+00:00",
        status="ok",
        workload="resnet50",
        device="GPU:0",
        precision=precision,
        xla=False,
        loop="custom",
        batch_size=256,
        samples_per_second=Interval(median=1000.0, ci_low=990.0, ci_high=1010.0),
        config=BenchConfig.model_validate(config),
        env=env,
    )


def test_a_run_from_before_reads_as_tf32_on() -> None:
    old = _a100_run(None)
    assert old.config.tf32 is True
    back = RunResult.model_validate(old.to_json_dict() | {"config": {"workload": "resnet50"}})
    assert back.config.tf32 is True


def test_compare_names_a_tf32_difference() -> None:
    """On an A100 in fp32 a TF32 difference makes two runs incomparable (it changes the
    matmuls); a run from before the setting reads as on; on a CPU it is listed only."""
    c = compare(_a100_run(None), _a100_run(False))
    tf32 = [d for d in c.differences if d.what == "TF32"]
    assert [(d.a, d.b, d.blocks) for d in tf32] == [("on", "off", True)]
    assert not c.comparable and c.speedup is None
    assert not [d for d in compare(_a100_run(None), _a100_run(True)).differences]
    mixed = compare(_a100_run(True, "mixed_float16"), _a100_run(False, "mixed_float16"))
    assert mixed.comparable and [d.what for d in mixed.differences] == ["TF32"]
    cpu = {"device": "CPU:0", "env": {"tensorflow": "2"}}
    a = _a100_run(None).model_copy(update=cpu)
    b = _a100_run(False).model_copy(update={**cpu, "env": {"tensorflow": "2", "tf32_enabled": 0}})
    assert compare(a, b).comparable and compare(a, b).speedup is not None


def test_runs_compare_prints_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save_many([_a100_run(True), _a100_run(False)])
    r = run_in_process("runs", "compare", "1", "2", "--db", str(db))
    assert r.code == 0, r.err
    assert "not comparable: they differ in TF32" in r.out


def test_stored_runs_with_the_other_setting_are_not_measured_values(tmp_path: Path) -> None:
    """A --no-tf32 run is not what a TF32 prediction of the same GPU measured, and back."""
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save(_a100_run(False))
    args = ("--gpus", "a100-40gb-sxm", "--db", str(db), "--precision", "fp32")
    assert _predict(*args)[0]["measured"] is None
    assert _predict(*args, "--no-tf32")[0]["measured"] == 1000.0


@pytest.mark.parametrize(
    ("enabled", "precision", "kind", "cc", "says"),
    [
        (True, "fp32", "GPU", (8, 0), "TF32 is on"),
        (True, "fp32", "CPU", None, None),
        (True, "mixed_float16", "GPU", (9, 0), None),
        (False, "fp32", "GPU", (8, 6), "on CUDA cores"),
        (False, "fp32", "GPU", (7, 0), "changes nothing on this GPU (compute capability 7.0"),
        (False, "mixed_bfloat16", "GPU", (8, 0), "run in bfloat16 on tensor cores anyway"),
        (False, "fp32", "CPU", None, "changes nothing on a CPU"),
    ],
)
def test_what_a_run_says(
    enabled: bool, precision: str, kind: str, cc: tuple[int, int] | None, says: str | None
) -> None:
    note = tf32_run_note(enabled, precision, kind, cc)
    assert note == says if says is None else (note is not None and says in note)


def test_what_a_prediction_says() -> None:
    assert tf32_prediction_note("fp32", True) == TF32_ON
    # a PyTorch model: on by gpuscout's choice, which is not PyTorch's own default
    torch_on = tf32_prediction_note("fp32", True, "torch")
    assert (
        torch_on != TF32_ON and torch_on is not None and "PyTorch's own default is off" in torch_on
    )
    assert tf32_prediction_note("fp32", False, "torch") == TF32_OFF
    assert tf32_prediction_note("fp32", False) == TF32_OFF
    assert tf32_prediction_note("mixed_float16", True) is None
    assert "float16" in (tf32_prediction_note("mixed_float16", False) or "")
