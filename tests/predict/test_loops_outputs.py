"""What a user sees of a recurrent model once its loops are counted (issue 30): the BiLSTM
example's prediction has compute in it, ``bench --model`` an MFU that is not 0 %, a count that
is a lower bound says so, and profiles counted before loops were are not reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscout.predict.hlo import LOWER_BOUND
from tests.conftest import run_cli
from tests.data import recurrent_models as rec
from tests.report.runs import _run

MODELS = Path(__file__).parents[1] / "data" / "recurrent_models.py"
EXAMPLE = Path(__file__).parents[2] / "examples" / "models" / "lstm.py"


def test_the_bilstm_example_is_predicted_with_its_time_steps() -> None:
    """The example: a BiLSTM, 128 steps of a 128-wide embedding, 128 units a direction,
    batch 32. Its matmuls, per direction and step, x_t @ W and h @ U: 2 x 4 gates x 128 units
    x (128 + 128) x 32 FLOPs; training 3 x forward (the embedding is trained, so the gradient
    to the LSTM's inputs is computed too), plus the 2-class Dense (3 x 2 x 32 x 256 x 2). Before
    loops were counted its prediction had no compute and 336 kernel launches."""
    from gpuscout.catalog import load_catalog
    from gpuscout.predict.request import PredictRequest, predict_for
    from gpuscout.predict.roofline import terms

    answer = predict_for(
        PredictRequest(gpus="rtx-4090", model=f"{EXAMPLE}:build", precision="mixed_float16")
    )
    forward = 2 * (128 * 2 * 4 * 128 * (128 + 128) * 32)  # two directions, 128 steps
    analytic = 3 * forward + 3 * 2 * 32 * 256 * 2
    profile, row = answer.profile, answer.rows[0]
    assert profile.flops["matmul"] == pytest.approx(analytic, rel=0.10)
    assert row.classes["matmul"]["flops"] == pytest.approx(analytic, rel=0.10)
    assert not profile.flops_lower_bound
    assert "4 while loops" in profile.method and "(128, 128, 128, 128)" in profile.method
    assert any("4 while loops" in note for note in answer.notes + row.assumptions)
    # each of the 4 loops (2 directions, forward and gradient) launches kernels every step
    assert row.launches > 4 * 128
    parts = terms(profile, load_catalog().resolve("rtx-4090").gpu)
    compute = float((parts.count * parts.compute).sum())  # seconds at the units' full peak
    assert compute >= analytic / (parts.peak.max() or 1.0) > 0.0


def test_bench_counts_a_recurrent_model_for_its_mfu() -> None:
    """TensorFlow's graph of the forward pass does not show a loop's body (its MFU read
    0.0 %): the step's HLO is counted instead, each loop x its trip count."""
    from gpuscout.measure.backends.tensorflow.flops import HLO_METHOD

    r = run_cli("bench", "--model", f"{MODELS}:lstm", "--json", "--steps", "5",
                "--warmup-steps", "1", "-b", "8")  # fmt: skip
    assert r.code == 0, r.err
    out = r.json()
    assert out["status"] == "ok"
    assert out["flops_per_step"] == pytest.approx(
        rec.training_matmul_flops(4, rec.LSTM_UNITS, 8), rel=0.10
    )
    assert out["flops_method"].startswith(HLO_METHOD) and LOWER_BOUND not in out["flops_method"]
    assert out["mfu"] is not None and out["mfu"] > 0
    assert any(a.startswith("FLOPs per step: (2 per") for a in out["assumptions"])


def test_mfu_is_never_printed_as_zero() -> None:
    """A lower bound reads 'at least', a share that rounds to 0.0 % reads '< 0.1%', an MFU
    that was not counted 'unknown'."""
    from gpuscout.report.terminal import flops_rows

    counted = "counted from XLA's HLO of the training step (dot and convolution only)"
    bound = f"{counted}; {LOWER_BOUND}: a loop's trip count is unknown"
    base = {"peak_tflops": 100.0, "tflops": 2.0, "mfu": 0.02, "flops_method": counted}
    assert dict(flops_rows(_run(**base))) == {
        "achieved": "2 TFLOP/s", "MFU": "2.0% of 100 TFLOP/s"
    }  # fmt: skip
    rows = dict(flops_rows(_run(**{**base, "flops_method": bound})))
    assert rows["achieved"] == "at least 2 TFLOP/s"
    assert rows["MFU"].startswith("at least 2.0% of 100 TFLOP/s") and "lower bound" in rows["MFU"]
    tiny = dict(flops_rows(_run(**{**base, "tflops": 0.001, "mfu": 0.00001})))
    assert tiny["MFU"] == "< 0.1% of 100 TFLOP/s"
    unknown = dict(flops_rows(_run(**{**base, "tflops": None, "mfu": None})))
    assert "achieved" not in unknown and unknown["MFU"].startswith("unknown")


def test_a_profile_counted_before_loops_were_is_traced_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user model's cached profile from the counting that missed loop bodies has the same
    key (the model file did not change): its file name lacks the counting's revision, so it
    is not read back; one stored now is."""
    from gpuscout.predict import profile as profiles

    monkeypatch.setattr(profiles, "cache_dir", lambda: tmp_path)
    new = profiles.Profile(
        workload="model:lstm.py:build:abc", dims={}, batch=32, precision="fp32",
        flops={"matmul": 16.0}, bytes={"matmul": 48.0}, params=4, param_bytes=16,
        optimizer_state_bytes=32, saved_activation_bytes=0.0, method="test", tf_version="x",
    )  # fmt: skip
    stale = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in new.key)
    (tmp_path / f"{stale}.json").write_text(json.dumps(new.model_dump(mode="json")))
    assert profiles.cached(new.workload, {}, 32, "fp32") is None
    profiles.store(new)
    assert profiles.cached(new.workload, {}, 32, "fp32") == new


@pytest.mark.parametrize(
    ("mode", "direction", "time_major", "gates", "dirs"),
    [("lstm", "unidirectional", False, 4, 1), ("gru", "bidirectional", True, 3, 2)],
)
def test_a_cudnn_recurrent_layer_is_counted_for_bench(
    mode: str, direction: str, time_major: bool, gates: int, dirs: int
) -> None:
    """On a GPU, Keras runs an LSTM or GRU on TensorFlow as one CudnnRNNV3 op, not a loop:
    bench counts its matmuls per time step from the op's shapes (the graph is only traced,
    so this runs on a CPU): 2 x gates x units x (inputs + units) a step, direction, sample."""
    tf = pytest.importorskip("tensorflow")
    from gpuscout.measure.backends.tensorflow.flops import _op_flops

    seq, batch, inputs, units = rec.SEQ, 2, rec.FEATURES, rec.LSTM_UNITS

    def layer(x: object, h: object, c: object, params: object) -> object:
        return tf.raw_ops.CudnnRNNV3(
            input=x, input_h=h, input_c=c, params=params, is_training=True, rnn_mode=mode,
            direction=direction, sequence_lengths=tf.constant([seq] * batch),
            time_major=time_major,
        )[0]  # fmt: skip

    x = (seq, batch, inputs) if time_major else (batch, seq, inputs)
    h = (dirs, batch, units) if time_major else (batch, dirs, units)
    specs = [tf.TensorSpec(x), tf.TensorSpec(h), tf.TensorSpec(h), tf.TensorSpec((None,))]
    graph = tf.function(layer).get_concrete_function(*specs).graph
    (op,) = [op for op in graph.get_operations() if op.type == "CudnnRNNV3"]
    assert _op_flops(op) == 2 * gates * units * (inputs + units) * batch * seq * dirs
