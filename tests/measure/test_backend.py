"""Every workload builds and trains a few steps on the CPU, through the real TensorFlow code."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig
from gpuscout.measure import bench
from gpuscout.workloads import WORKLOADS

pytest.importorskip("tensorflow")
DATA = Path(__file__).parent.parent / "data"


def _tiny(name: str, **kw: object) -> BenchConfig:
    base: dict[str, object] = {
        "workload": name,
        "dims": dict(WORKLOADS[name].tiny),
        "batch_size": 4,
        "steps": 8,
        "warmup_steps": 2,
        "seconds": None,
        "device": "CPU:0",
    }
    return BenchConfig.model_validate({**base, **kw})


@pytest.mark.parametrize(
    "name",
    [
        "mlp",
        "cnn-small",
        pytest.param("resnet50", marks=pytest.mark.slow),
        pytest.param("bert-base", marks=pytest.mark.slow),
    ],
)
def test_workload_trains_at_tiny_size(name: str) -> None:
    """Each workload builds, trains and is counted. The large ones take 3 steps, not 10: a
    tiny ResNet-50's steps cost 3 CPU-s of its 18 (its build and trace the rest), and that
    the protocol measures exactly the steps asked after the warm-up asked is the same code
    for every workload (checked with 8 and 2 on the small ones)."""
    config = _tiny(name) if name in ("mlp", "cnn-small") else _tiny(name, steps=2, warmup_steps=1)
    result = bench(config)
    assert result.status == "ok", result.message
    assert result.measured_steps == config.steps
    assert result.warmup is not None and result.warmup.steps == config.warmup_steps
    assert config.steps is not None and config.warmup_steps is not None
    assert len(result.step_times_s) == config.steps + config.warmup_steps
    assert result.samples_per_second is not None and result.samples_per_second.median > 0
    assert result.flops_per_step and result.flops_per_step > 0
    assert result.mfu is not None and 0 < result.mfu < 1
    assert result.env["workload_hash"] and result.env["tensorflow"].startswith("2.")


def test_fit_loop_measures_the_same_model() -> None:
    result = bench(_tiny("mlp", loop="fit"))
    assert result.status == "ok", result.message
    assert result.loop == "fit" and result.measured_steps == 8


def test_xla_and_bfloat16_run_with_emulation_warning() -> None:
    result = bench(_tiny("mlp", xla=True, precision="mixed_bfloat16"))
    assert result.status == "ok", result.message
    assert result.env["precision"] == "mixed_bfloat16" and result.env["xla"] is True
    from gpuscout.measure.environment import cpu_has_native_bf16

    assert any("emulated" in w for w in result.warnings) != cpu_has_native_bf16()


def test_mixed_float16_uses_loss_scaling_and_warns_on_cpu() -> None:
    result = bench(_tiny("cnn-small", precision="mixed_float16"))
    assert result.status == "ok", result.message
    assert any("mixed_float16 on a CPU is emulated" in w for w in result.warnings)


def test_adaptive_run_converges_or_says_why() -> None:
    result = bench(_tiny("mlp", steps=None, warmup_steps=None, seconds=8, batch_size=32))
    assert result.status == "ok"
    assert result.stop_reason in ("converged", "budget")
    assert result.warmup is not None and result.warmup.method in ("detected", "not found")
    sps = result.samples_per_second
    assert sps is not None and sps.ci_low is not None and sps.ci_high is not None
    assert sps.ci_low <= sps.median <= sps.ci_high
    if result.stop_reason == "converged":
        assert result.ci_rel_halfwidth is not None and result.ci_rel_halfwidth <= 0.02
    else:
        assert any("too short" in w for w in result.warnings)


def test_user_model_compiled() -> None:
    result = bench(_tiny("mlp", model=f"{DATA}/user_models.py:compiled_regressor", dims={}))
    assert result.status == "ok", result.message
    assert result.flops_method and "counted from TensorFlow's graph" in result.flops_method
    assert result.flops_per_step == 4 * 3 * 2 * (12 * 8 + 8 * 1)  # batch 4, two dense layers
    assert result.workload.endswith(":compiled_regressor")


def test_user_model_uncompiled_gets_stated_defaults() -> None:
    result = bench(_tiny("mlp", model=f"{DATA}/user_models.py:uncompiled_classifier", dims={}))
    assert result.status == "ok", result.message
    text = " ".join(result.assumptions)
    assert "sparse categorical cross-entropy (from_logits=True) over 5 classes" in text
    assert "Adam" in text and "integer labels in [0, 5)" in text


def test_user_data_function() -> None:
    result = bench(
        _tiny(
            "mlp",
            model=f"{DATA}/user_models.py:uncompiled_classifier",
            data=f"{DATA}/user_models.py:dataset",
            dims={},
        )
    )
    assert result.status == "ok", result.message
    assert result.batch_size == 16


def test_keras_file_loads_in_safe_mode(tmp_path: Path) -> None:
    import keras

    path = tmp_path / "m.keras"
    keras.Sequential([keras.Input((6,)), keras.layers.Dense(3, activation="softmax")]).save(path)
    result = bench(_tiny("mlp", model=str(path), dims={}))
    assert result.status == "ok", result.message


def test_model_function_returning_something_else() -> None:
    with pytest.raises(UserError, match=r"returned dict, not a keras\.Model"):
        bench(_tiny("mlp", model=f"{DATA}/user_models.py:not_a_model", dims={}))


def test_missing_function_lists_the_ones_there() -> None:
    with pytest.raises(UserError, match=r"has no function 'nope'.*compiled_regressor"):
        bench(_tiny("mlp", model=f"{DATA}/user_models.py:nope", dims={}))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ("raises", r"--data .*user_models\.py:raises raised ValueError at line \d+: width"),
        ("empty_dataset", r"--data .*:empty_dataset returned an empty dataset"),
    ],
)
def test_data_that_fails_before_measuring_is_refused(data: str, says: str) -> None:
    # Refused (nothing stored), as a model builder that fails is: found before measuring.
    model = f"{DATA}/user_models.py:uncompiled_classifier"
    with pytest.raises(UserError, match=says):
        bench(_tiny("mlp", model=model, data=f"{DATA}/user_models.py:{data}", dims={}))


def test_out_of_memory_becomes_an_oom_result() -> None:
    result = bench(_tiny("mlp", model=f"{DATA}/user_models.py:runs_out_of_memory", dims={}))
    assert result.status == "oom"
    assert result.message and "Try --batch-size 2" in result.message


def test_bench_restores_the_callers_precision_policy() -> None:
    import keras

    keras.mixed_precision.set_global_policy("float32")
    bench(_tiny("mlp", precision="mixed_bfloat16"))
    assert keras.mixed_precision.global_policy().name == "float32"
