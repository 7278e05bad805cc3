"""``--stack``: the software level a prediction assumes where no stored run anchors it
(``predict/stacks.py``, ``data/stacks.csv``), and one default precision for training in every
command (issue 41). Real catalog, shipped fit, real commands."""

from __future__ import annotations

import statistics

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.cli.job_args import STACK_HELP
from gpuscout.core.run_settings import TRAINING_PRECISION
from gpuscout.predict.calibrate import calibration_for
from gpuscout.predict.stacks import default_level, levels, stack_level
from tests.conftest import run_cli, run_in_process


def test_each_level_is_learned_from_its_own_stacks_rows() -> None:
    """Every level names stacks the shipped fit has, and its traffic factor is their median;
    the default is the stack gpuscout measures with on each backend."""
    cal = calibration_for(load_catalog())
    assert set(levels()) == {"tf", "tf-xla", "keras-jax", "pytorch", "tuned"}
    for level in levels().values():
        assert level.stacks and set(level.stacks) <= set(cal.stacks), level.name
        traffic, whose = cal.traffic(level)
        assert traffic == statistics.median(cal.stacks[s] for s in level.stacks)
        assert level.name in whose and level.description
    assert default_level("tensorflow").name == "tf"  # bench's default: TensorFlow, no XLA
    assert default_level("jax").name == "keras-jax"
    assert stack_level(None, "jax").name == "keras-jax" and stack_level("tuned").name == "tuned"
    # the help names every level (written out: the parser is built without importing predict)
    assert all(f" {name} " in f" {STACK_HELP.replace(',', ' ')} " for name in levels())


def _predicted(*args: str) -> dict[str, object]:
    r = run_cli("predict", "--workload", "resnet50", "--gpus", "a100-40gb-sxm", "--json", *args,
                block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    row: dict[str, object] = r.json()[0]
    return row


def test_the_stack_changes_the_level_and_is_said() -> None:
    default, pytorch = _predicted(), _predicted("--stack", "pytorch")
    assert default["samples_per_second"] != pytorch["samples_per_second"]
    said = " ".join(default["common_assumptions"])  # type: ignore[arg-type]
    assert "software stack: tf (TensorFlow (Keras or tf.keras) without XLA" in said
    assert "--stack picks another" in said
    assert "software stack: pytorch" in " ".join(pytorch["common_assumptions"])  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["predict", "advise", "cost"])
def test_an_unknown_stack_is_one_line(command: str) -> None:
    job = ("--epochs", "1") if command != "predict" else ()
    r = run_in_process(command, "--workload", "resnet50", *job, "--stack", "caffe")
    assert r.code == 2 and "Traceback" not in r.err
    assert "--stack 'caffe' is not a known software stack" in r.err and "tuned" in r.err


def test_predict_and_advise_assume_the_same_precision() -> None:
    """Before, ``predict`` defaulted to fp32 and the job commands to mixed precision: an RTX
    3090 read 575 images/s in one and 947 in the other."""
    assert TRAINING_PRECISION == "mixed_float16"
    predicted = _predicted()
    said = predicted["common_assumptions"]
    assert f"precision {TRAINING_PRECISION}, every command's default for training" in " ".join(
        said  # type: ignore[arg-type]
    )
    advised = run_in_process("advise", "--workload", "resnet50", "--epochs", "1", "--counts", "1",
                             "--top", "1000", "--json")  # fmt: skip
    assert advised.code == 0, advised.err
    advice = advised.json()
    option = next(c for c in advice["ranked"] if c["gpu"] == "a100-40gb-sxm")
    assert option["samples_per_second"] == pytest.approx(predicted["samples_per_second"], rel=1e-9)
    # one GPU: the job's batch, 256, is the global batch and the GPU's own
    assert any(f"({TRAINING_PRECISION}, global batch 256" in a for a in advice["assumptions"])
    assert option["batch"] == 256 and option["accumulation"] == 1
    fp32 = _predicted("--precision", "fp32")
    assert fp32["samples_per_second"] < predicted["samples_per_second"]  # it is a real choice
    inference = run_in_process("predict", "--workload", "mlp", "--mode", "inference", "--json")
    assert inference.code == 0, inference.err
    assert any("precision fp32 (the default for inference" in n
               for n in inference.json()[0]["common_assumptions"])  # fmt: skip
