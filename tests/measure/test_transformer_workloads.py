"""bert-large and the GPT-2 family: their sizes and FLOP formulas (no TensorFlow), and the real
Keras models at tiny sizes on the CPU: they train, GPT-2's attention is causal, its output
projection is the token embedding, and XLA's HLO of the train step does the analytic FLOPs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuscout.core.errors import UserError
from gpuscout.workloads import GPT2_CONTEXT, WORKLOADS, get_workload

NEW = ("bert-large", "gpt2", "gpt2-medium", "gpt2-large")
GPT2 = ("gpt2", "gpt2-medium", "gpt2-large")
# A small GPT-2 whose HLO is traced in seconds, with every size distinct from the others so a
# formula that confuses two of them fails.
SMALL = {"seq_len": 32, "layers": 2, "hidden": 64, "heads": 4, "ffn": 256, "vocab": 1000}


def gpt2_params(d: dict[str, int]) -> int:
    """Trainable parameters of GPT-2 with tied embeddings: one vocab x hidden matrix, the
    position table, per block two LayerNorms (4h), Q/K/V/output with biases (4h^2 + 4h) and the
    feed-forward with biases (2 h ffn + ffn + h), and the final LayerNorm (2h)."""
    h, ffn = d["hidden"], d["ffn"]
    block = 4 * h + 4 * h * h + 4 * h + 2 * h * ffn + ffn + h
    return d["vocab"] * h + d["seq_len"] * h + d["layers"] * block + 2 * h


def test_the_released_sizes() -> None:
    """Hugging Face's gpt2 checkpoint has 124,439,808 parameters (tied, 1,024 positions)."""
    sizes = {n: WORKLOADS[n].resolve() for n in NEW}
    assert {k: sizes["bert-large"][k] for k in ("layers", "hidden", "heads", "ffn")} == {
        "layers": 24, "hidden": 1024, "heads": 16, "ffn": 4096,
    }  # fmt: skip
    assert [(d["layers"], d["hidden"], d["heads"]) for d in (sizes[n] for n in GPT2)] == [
        (12, 768, 12), (24, 1024, 16), (36, 1280, 20),
    ]  # fmt: skip
    for name in GPT2:
        d = sizes[name]
        assert (d["vocab"], d["seq_len"], d["ffn"]) == (50257, GPT2_CONTEXT, 4 * d["hidden"])
        assert WORKLOADS[name].task == "causal-lm"
        assert WORKLOADS[name].labels_shape(d) == (d["seq_len"],)
    assert gpt2_params(sizes["gpt2"]) == 124_439_808
    assert gpt2_params(sizes["gpt2-medium"]) == pytest.approx(355e6, rel=0.01)
    assert gpt2_params(sizes["gpt2-large"]) == pytest.approx(774e6, rel=0.01)


@pytest.mark.parametrize("name", GPT2)
def test_gpt2_flops_are_6n_per_token_plus_attention_plus_head(name: str) -> None:
    w = WORKLOADS[name]
    d = w.resolve()
    length, h, layers = d["seq_len"], d["hidden"], d["layers"]
    non_embedding = layers * (4 * h * h + 2 * h * d["ffn"])
    attention = 12 * layers * length * length * h  # 3 x 2 x (QK^T + PV: 2 L^2 h) per layer
    head = 6 * length * h * d["vocab"]  # the tied projection onto the vocabulary
    expected = 6 * non_embedding * length + attention + head
    assert w.training_flops_per_sample(d) == expected
    # At half the context the attention term is a quarter, the rest half.
    half = w.training_flops_per_sample(w.resolve({"seq_len": length // 2}))
    assert half == (6 * non_embedding * length + attention / 2 + head) / 2


def test_bert_large_is_bert_base_at_large_sizes() -> None:
    base, large = WORKLOADS["bert-base"], WORKLOADS["bert-large"]
    d = large.resolve()
    per_token = large.training_flops_per_sample(d) / 128
    head = 6 * (1024 * 1024 + 1024 * 2) / 128  # pooler and 2-class classifier, once a sequence
    layers = 6 * 24 * (4 * 1024**2 + 2 * 1024 * 4096) + 12 * 24 * 128 * 1024
    assert per_token == pytest.approx(layers + head, rel=1e-12)
    assert large.training_flops_per_sample(d) == base.training_flops_per_sample(d)


def test_a_sequence_longer_than_the_context_is_refused() -> None:
    w = WORKLOADS["gpt2"]
    assert w.resolve({"seq_len": GPT2_CONTEXT})["seq_len"] == GPT2_CONTEXT
    with pytest.raises(UserError) as err:
        w.resolve({"seq_len": 2000})
    assert "gpt2 takes seq_len up to 1,024" in str(err.value)
    assert "got 2,000" in str(err.value) and "--seq-len 1024 or less" in str(err.value)
    assert WORKLOADS["bert-large"].resolve({"seq_len": 2000})["seq_len"] == 2000  # no table cap


def test_unknown_name_suggests_gpt2() -> None:
    with pytest.raises(UserError, match="Did you mean 'gpt2'"):
        get_workload("gpt-2")


def test_audit_counts_the_new_workloads() -> None:
    from gpuscout.audit.flops import workload_flops

    for name in NEW:
        w = WORKLOADS[name]
        assert workload_flops(name).flops_per_sample == w.training_flops_per_sample(w.resolve())
    at_512 = workload_flops("gpt2-medium", seq_len=512)
    assert "sequence length 512" in at_512.note
    with pytest.raises(UserError, match="up to 1,024"):
        workload_flops("gpt2", seq_len=4096)


# --- the Keras models (TensorFlow on the CPU, tiny sizes) ---


def _train(name: str, dims: dict[str, int], steps: int) -> tuple[float, list[float], float]:
    """The loss on one fixed generated batch without dropout, then the losses of ``steps``
    training steps on it (through the train step the benchmark times), then the loss again.

    The learning rate is raised to 1e-3 so that a few steps move a tiny model measurably; the
    before/after losses are taken with dropout off, so its noise cannot hide or fake a fall.
    """
    tf = pytest.importorskip("tensorflow")
    import keras

    from gpuscout.measure.backends.keras.models import BUILDERS
    from gpuscout.measure.backends.tensorflow.data import arrays
    from gpuscout.measure.backends.tensorflow.train import train_step_function

    keras.utils.set_random_seed(0)
    w = WORKLOADS[name]
    d = w.resolve(dims)
    built = BUILDERS[name](d)
    built.optimizer.learning_rate = 1e-3
    x, y = (tf.constant(a) for a in arrays(w, d, 8, seed=0))

    def loss() -> float:
        return float(built.loss(y, built.model(x, training=False)))

    before = loss()
    step = train_step_function(tf, built, "fp32", jit_compile=False)
    losses = [float(step(x, y)) for _ in range(steps)]
    return before, losses, loss()


# The GPT-2 sizes share one builder and one tiny configuration: training one trains them all.
@pytest.mark.parametrize("name", ["bert-large", "gpt2"])
def test_trains_and_its_loss_falls(name: str) -> None:
    w = WORKLOADS[name]
    before, losses, after = _train(name, dict(w.tiny), steps=4)
    assert all(math.isfinite(v) for v in [before, *losses, after]), losses
    assert after < before, (before, losses, after)
    if w.task == "causal-lm":  # next-token cross-entropy starts near ln(vocab): nothing learnt
        assert before == pytest.approx(math.log(w.resolve(w.tiny)["vocab"]), rel=0.1)


def test_labels_are_the_next_tokens() -> None:
    from gpuscout.measure.backends.tensorflow.data import arrays

    w = WORKLOADS["gpt2"]
    d = w.resolve(SMALL)
    x, y = arrays(w, d, 5, seed=3)
    assert x.shape == y.shape == (5, 32) and x.dtype == np.int32 and y.dtype == np.int32
    assert (x[:, 1:] == y[:, :-1]).all()
    assert x.min() >= 0 and max(x.max(), y.max()) < 1000


def _gpt2_model(dims: dict[str, int]):  # type: ignore[no-untyped-def]
    pytest.importorskip("tensorflow")
    import keras

    from gpuscout.measure.backends.keras.models import BUILDERS

    keras.utils.set_random_seed(1)
    return BUILDERS["gpt2"](WORKLOADS["gpt2"].resolve(dims)).model


def test_attention_is_causal() -> None:
    """Changing the token at position t changes no output before t, and does change t's."""
    model = _gpt2_model(SMALL)
    x = np.random.default_rng(0).integers(0, 1000, size=(2, 32)).astype("int32")
    changed = x.copy()
    changed[:, 20] = (changed[:, 20] + 1) % 1000
    before, after = model(x, training=False), model(changed, training=False)
    before, after = np.asarray(before), np.asarray(after)
    assert before.shape == (2, 32, 1000) and before.dtype == np.float32
    np.testing.assert_array_equal(before[:, :20], after[:, :20])
    assert np.abs(before[:, 20:] - after[:, 20:]).max(axis=-1).min() > 0  # every later position


def test_output_projection_is_the_token_embedding() -> None:
    """Tied: one vocab x hidden matrix in the parameter count, the head's own being it."""
    model = _gpt2_model(SMALL)
    assert model.count_params() == gpt2_params(SMALL)
    head, table = model.get_layer("lm_head").weights, model.get_layer("token_embedding").embeddings
    assert len(head) == 1 and head[0] is table  # the head's only weight is the embedding's
    shapes = [tuple(v.shape) for v in model.trainable_variables]
    assert shapes.count((1000, 64)) == 1 and (64, 1000) not in shapes


def test_mixed_precision_keeps_float32_logits() -> None:
    pytest.importorskip("tensorflow")
    import keras

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = _gpt2_model({**SMALL, "layers": 1})
        out = model(np.zeros((1, 32), dtype="int32"), training=False)
        assert out.dtype == "float32"
        assert model.get_layer("token_embedding").embeddings.dtype == "float32"
    finally:
        keras.mixed_precision.set_global_policy(previous)


def test_hlo_of_the_train_step_does_the_analytic_flops() -> None:
    """The matmul FLOPs XLA is asked for (forward, both backward products, the tied head's
    three) equal the analytic count; stated tolerance 0.1 %, found exact. (bert-large is
    bert-base's code, whose tiny step tests/predict/test_hlo.py holds to the same formula.)"""
    pytest.importorskip("tensorflow")
    from gpuscout.predict.profile_trace import compute

    w = WORKLOADS["gpt2"]
    profile = compute("gpt2", SMALL, 4, "fp32")
    analytic = w.training_flops_per_sample(w.resolve(SMALL))
    assert analytic is not None
    assert profile.flops["matmul"] / 4 == pytest.approx(analytic, rel=1e-3)
    assert profile.params == gpt2_params(SMALL)
    # The activation floor that refuses impossible sizes stays below what the step keeps.
    from gpuscout.core.limits import activation_floor

    floor = activation_floor("gpt2", w.resolve(SMALL), 4, "fp32", "train")
    assert profile.saved_activation_bytes / 4 < floor <= profile.saved_activation_bytes


def test_tensorflow_graph_count_agrees() -> None:
    """The count a user's model gets (matmul, einsum in TensorFlow's graph, 3 x forward) finds
    the same FLOPs in the built-in GPT-2, its tied head's MatMul included."""
    tf = pytest.importorskip("tensorflow")
    from gpuscout.measure.backends.tensorflow.flops import training_flops_per_sample

    model = _gpt2_model(SMALL)
    analytic = WORKLOADS["gpt2"].training_flops_per_sample(WORKLOADS["gpt2"].resolve(SMALL))
    assert training_flops_per_sample(tf, model) == analytic


@pytest.mark.slow
def test_gpt2_benches_end_to_end() -> None:
    """Through ``bench``: measured, with the analytic FLOPs behind its MFU."""
    pytest.importorskip("tensorflow")
    from gpuscout.core.records import BenchConfig
    from gpuscout.measure import bench

    w = WORKLOADS["gpt2"]
    config = BenchConfig.model_validate(
        {"workload": "gpt2", "dims": dict(w.tiny), "batch_size": 2, "steps": 2,
         "warmup_steps": 1, "seconds": None, "device": "CPU:0"}
    )  # fmt: skip
    result = bench(config)
    assert result.status == "ok", result.message
    assert result.measured_steps == 2
    assert result.flops_per_step == 2 * w.training_flops_per_sample(w.resolve(w.tiny))
