"""The workload registry and its analytic FLOPs, checked against TensorFlow's own count."""

from __future__ import annotations

import pytest

from gpuscout.core.errors import UserError
from gpuscout.workloads import WORKLOADS, get_workload, resnet50_forward_macs


def test_registry_has_the_issue_workloads() -> None:
    assert {"mlp", "cnn-small", "resnet50", "bert-base"} <= set(WORKLOADS)
    for w in WORKLOADS.values():
        assert w.description and w.epoch_samples > 0 and w.default_batch_cpu > 0
        assert w.input_shape(w.resolve())


def test_epochs() -> None:
    assert WORKLOADS["mlp"].epoch_samples == 60_000
    assert WORKLOADS["resnet50"].epoch_samples == 1_281_167


def test_mlp_flops_exact() -> None:
    w = WORKLOADS["mlp"]
    assert w.training_flops_per_sample(w.resolve()) == 3 * 2 * (780 * 128 + 128 * 10)


def test_resnet50_forward_is_keras_v1_count() -> None:
    # Keras' ResNet50 is v1 (stride on the 1x1 conv): 3.86 GMAC; v1.5 (stride on the 3x3, the
    # resnet50-v1.5 workload) 4.09: the three downsampling 1x1 convs at 4x the pixels.
    assert resnet50_forward_macs(224, 1000) == pytest.approx(3.858e9, rel=1e-3)
    v15 = resnet50_forward_macs(224, 1000, stride_on_3x3=True)
    assert v15 == pytest.approx(4.089e9, rel=1e-3)
    # each of the three adds 3x its v1 reduce, 28 x 28 x 256 x 128 MACs in every stage
    assert v15 - resnet50_forward_macs(224, 1000) == 3 * 3 * 28 * 28 * 256 * 128


def test_bert_base_is_6n_per_token_plus_attention() -> None:
    w = WORKLOADS["bert-base"]
    d = w.resolve()
    non_embedding_params = 12 * (4 * 768 * 768 + 2 * 768 * 3072)
    per_token = w.training_flops_per_sample(d) / 128
    attention = 12 * 12 * 128 * 768  # 3 x 2 x (2 L h) per layer and token
    assert per_token == pytest.approx(6 * non_embedding_params + attention, rel=0.01)


def test_seq_len_setting() -> None:
    w = WORKLOADS["bert-base"]
    assert w.input_shape(w.resolve({"seq_len": 64})) == (64,)
    with pytest.raises(UserError, match="seq_len must be positive"):
        w.resolve({"seq_len": 0})
    with pytest.raises(UserError, match="no setting 'depth'"):
        w.resolve({"depth": 3})


def test_unknown_workload_suggests() -> None:
    with pytest.raises(UserError) as err:
        get_workload("resnet-50")
    assert "Did you mean 'resnet50'?" in str(err.value)
    assert "mlp, cnn-small, resnet50, resnet50-v1.5, bert-base" in str(err.value)


@pytest.mark.parametrize("name", ["mlp", "cnn-small", "resnet50", "resnet50-v1.5", "bert-base"])
def test_analytic_flops_match_tensorflow_graph(name: str) -> None:
    """The formulas agree with the multiply-adds in TensorFlow's graph of the real model."""
    tf = pytest.importorskip("tensorflow")
    from gpuscout.measure.backends.keras.models import BUILDERS
    from gpuscout.measure.backends.tensorflow.flops import training_flops_per_sample

    w = WORKLOADS[name]
    dims = w.resolve(w.tiny)
    counted = training_flops_per_sample(tf, BUILDERS[name](dims).model)
    assert counted == pytest.approx(w.training_flops_per_sample(dims), rel=1e-9)
