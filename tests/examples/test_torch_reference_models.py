"""The plain-PyTorch reference models (``examples/models/torch_resnet50.py``, ``torch_bert.py``,
``torch_llama.py``; issue 44): each follows gpuscout's torch protocol and trains, and each is the
built-in workload it stands for: the same parameter count (or the difference said in its
docstring) and the same training FLOPs as ``Workload.flops_per_sample`` counts analytically.

Full sizes are built under ``FakeTensorMode`` (shapes, no memory: a 7B decoder in seconds) and
their training step counted by ``torch.utils.flop_counter.FlopCounterMode``. Attention runs on
SDPA's math backend there: the counter has no formula for the CPU's fused kernel
(``_scaled_dot_product_flash_attention_for_cpu``) and would leave attention out; the math
backend's backward is the 2 x forward the analytic count assumes (a GPU's fused kernels
recompute the scores in the backward pass, which the counter counts as one more matmul).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the reference models need pip install torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from gpuscout.measure.backends.torch.user_module import load  # noqa: E402
from gpuscout.measure.user_spec import FunctionSpec  # noqa: E402
from gpuscout.workloads import WORKLOADS, resnet50_forward_macs  # noqa: E402
from gpuscout.workloads.llm import adapter_params, base_params, linear_shapes  # noqa: E402

MODELS = Path(__file__).parents[2] / "examples" / "models"
# Keras' parameter counts of the workloads (model.count_params() of measure/backends/keras/
# models.BUILDERS at these dims, 2026-12-07): bert-base at 384 and 128 tokens, bert-large at 384;
# resnet50-v1.5's trainable weights (its count_params adds batch norm's 53,120 moving stats).
KERAS_PARAMS = {
    ("bert-base", 384): 109_383_938,
    ("bert-base", 128): 109_187_330,
    ("bert-large", 384): 335_010_818,
}
KERAS_RESNET50_V15_TRAINABLE = 25_583_592
TORCHVISION_RESNET50_PARAMS = 25_557_032  # torchvision.models.ResNet50_Weights: num_params


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"reference_{name}", MODELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def _fake() -> Iterator[None]:
    with FakeTensorMode():
        yield


def _step_flops(model: Any, batch: int) -> int:
    """FLOPs of one training step (forward, loss, backward, optimizer) as torch counts them."""
    inputs, targets = model.example_batch(batch)
    optimizer = model.make_optimizer(model.parameters())
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        model.loss(model(inputs), targets).backward()
        optimizer.step()
    return int(counter.get_total_flops())


def _params(model: Any, trainable: bool = False) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable)


@pytest.mark.parametrize(
    ("file", "function"),
    [("torch_resnet50", "build"), ("torch_bert", "build_tiny"),
     ("torch_bert", "build_tiny_unfused"), ("torch_llama", "build_lora")],
)  # fmt: skip
def test_each_follows_the_protocol_and_trains_a_step(file: str, function: str) -> None:
    """Loaded as ``--model FILE.py:FUNCTION`` loads it, no assumption is needed (each brings
    its batch, loss and optimizer) and two steps move exactly the weights it trains (LoRA's A
    from the second: B starts at zero, so A's first gradient is zero)."""
    parts = load(FunctionSpec(MODELS / f"{file}.py", function), 2)
    assert parts.assumptions == []
    module = parts.module
    before = {n: p.detach().clone() for n, p in module.named_parameters()}
    optimizer = parts.make_optimizer(module.parameters())
    for _ in range(2):
        optimizer.zero_grad()
        loss = parts.loss(parts.forward(), parts.targets)
        loss.backward()
        optimizer.step()
        assert torch.isfinite(loss)
    moved = {n for n, p in module.named_parameters() if not torch.equal(p, before[n])}
    trained = {n for n, p in module.named_parameters() if p.requires_grad}
    assert moved == trained and trained
    if file == "torch_llama":  # LoRA: the adapters, and nothing of the base
        assert all(n.endswith(("lora_a", "lora_b")) for n in trained)


def test_resnet50_is_torchvisions_v15_and_the_workloads_flops() -> None:
    """torchvision's parameter count; the Keras workload's trainable weights plus one bias per
    conv output channel; the analytic v1.5 FLOPs less the stem's input gradient, which torch
    does not compute (the images need none) and the analytic count includes."""
    module = _example("torch_resnet50")
    workload = WORKLOADS["resnet50-v1.5"]
    with _fake():
        model = module.build()
        params = _params(model)
        conv_biases = sum(m.out_channels for m in model.modules() if isinstance(m, torch.nn.Conv2d))
        flops = _step_flops(model, 2) / 2
    assert params == TORCHVISION_RESNET50_PARAMS
    assert params + conv_biases == KERAS_RESNET50_V15_TRAINABLE
    analytic = workload.flops_per_sample(workload.dims)
    stem_input_grad = 2 * 112 * 112 * 7 * 7 * 3 * 64
    assert flops == analytic - stem_input_grad
    assert abs(flops / analytic - 1) < 0.01
    assert 3 * 2 * resnet50_forward_macs(224, 1000, stride_on_3x3=True) == analytic


@pytest.mark.parametrize(
    ("workload", "builder", "seq_len"),
    [("bert-base", "build", 128), ("bert-base", "build_squad", 384),
     ("bert-large", "build_large_squad", 384)],
)  # fmt: skip
def test_bert_matches_the_keras_workload(workload: str, builder: str, seq_len: int) -> None:
    """Keras' parameter count exactly, and the analytic training FLOPs exactly."""
    module = _example("torch_bert")
    with _fake():
        model = getattr(module, builder)()
        params = _params(model)
        flops = _step_flops(model, 2) / 2
    assert model.dims["seq_len"] == seq_len
    assert params == KERAS_PARAMS[(workload, seq_len)]
    assert flops == WORKLOADS[workload].flops_per_sample(model.dims)


def test_bert_attentions_are_one_function_and_only_unfused_writes_the_scores() -> None:
    """``"sdpa"`` and ``"unfused"`` (DeepLearningExamples' sequence-first bmm, mask, softmax)
    give the same outputs from the same weights (dropout off, one GELU); captured, the unfused
    step writes the [batch, heads, L, L] probabilities and runs no fused attention kernel, the
    sdpa step the reverse: the difference the published rows' profiles rest on."""
    from gpuscout.measure.backends.torch.capture import capture

    module = _example("torch_bert")
    fused, unfused = module.build_tiny(), module.build_tiny_unfused()
    unfused.load_state_dict(fused.state_dict())
    for layer in unfused.layers:
        layer.approximate = "none"
    ids, _ = fused.example_batch(3)
    fused.eval(), unfused.eval()
    with torch.no_grad():
        torch.testing.assert_close(unfused(ids), fused(ids))
    d = fused.dims
    scores = (2, d["heads"], d["seq_len"], d["seq_len"])
    for builder, writes_scores in (("build_tiny", False), ("build_tiny_unfused", True)):
        ops, _ = capture(torch, load(FunctionSpec(MODELS / "torch_bert.py", builder), 2),
                         "fp32", "train")  # fmt: skip
        softmax = [op for op in ops if op.name == "_softmax"]
        fused_kernels = [op for op in ops if "scaled_dot_product" in op.name]
        assert bool(softmax) is writes_scores and bool(fused_kernels) is not writes_scores
        assert all(op.outputs[0] is not None and op.outputs[0].shape == scores for op in softmax)
        # dropout's mask (the CPU's decomposition draws it with bernoulli_) on the probabilities
        masks = [op.outputs[0] for op in ops if op.name == "bernoulli_"]
        dropped = [t for t in masks if t is not None and t.shape == scores]
        assert len(dropped) == (d["layers"] if writes_scores else 0)


def _lora_layer0_skipped(d: dict[str, int]) -> float:
    """What the LoRA step does not compute that the analytic count includes: the first block's
    q, k and v read the frozen embedding's output, which needs no gradient, so neither their
    base matmuls nor their adapters' A compute one for their input."""
    shapes = linear_shapes(d)
    per_token = sum(i * o + d["lora_rank"] * i for n, (i, o) in shapes.items()
                    if n in ("q_proj", "k_proj", "v_proj"))  # fmt: skip
    return 2.0 * d["seq_len"] * per_token


@pytest.mark.parametrize(
    ("name", "lora_rank"),
    [("llama-2-7b", 0), ("llama-2-7b", 64), ("llama-3.2-1b", 0), ("llama-tiny", 8)],
)
def test_llama_matches_the_decoder_workload(name: str, lora_rank: int) -> None:
    """The registry's parameter counts (base, and adapters trained under LoRA); full
    fine-tuning's FLOPs exactly, LoRA's less the first block's input gradients (0.3 % of
    Llama-2-7B's step; 3.8 % of llama-tiny's, where the first block is half the model)."""
    module = _example("torch_llama")
    with _fake():
        model = module.llama(name, lora_rank=lora_rank)
        total, trained = _params(model), _params(model, trainable=True)
        flops = _step_flops(model, 1)
    d = model.dims
    assert total == base_params(d) + adapter_params(d)
    assert trained == (adapter_params(d) if lora_rank else base_params(d))
    analytic = WORKLOADS[name].flops_per_sample(d)
    skipped = _lora_layer0_skipped(d) if lora_rank else 0.0
    assert flops == analytic - skipped
    if name != "llama-tiny":
        assert abs(flops / analytic - 1) < 0.01


def test_the_7b_builders_are_the_registrys_shapes() -> None:
    """The named builders are Llama-2-7B at the workload's 2,048 tokens, and QLoRA's rank."""
    module = _example("torch_llama")
    with _fake():
        full, lora = module.build_llama2_7b(), module.build_llama2_7b_lora()
    assert full.dims == WORKLOADS["llama-2-7b"].dims
    assert lora.dims == {**WORKLOADS["llama-2-7b"].dims, "lora_rank": 64}
    assert _params(full) == 6_738_415_616  # meta-llama/Llama-2-7b-hf's count


def test_checkpointing_and_unfused_attention_compute_the_same_step() -> None:
    """Per-block ``torch.utils.checkpoint`` and the written-out attention change how the step
    runs, not what it computes: from the same weights, the same loss and gradients (llama-tiny
    with grouped-query attention, float32 on the CPU)."""
    module = _example("torch_llama")
    torch.manual_seed(0)
    plain = module.llama("llama-tiny")
    inputs, targets = plain.example_batch(2)
    variants = [module.llama("llama-tiny", checkpointing=True),
                module.llama("llama-tiny", fused_attention=False)]  # fmt: skip
    results = []
    for model in [plain, *variants]:
        model.load_state_dict(plain.state_dict())
        loss = model.loss(model(inputs), targets)
        loss.backward()
        results.append((loss.detach(), [p.grad for p in model.parameters()]))
    assert variants[0].checkpointing and not plain.checkpointing
    loss0, grads0 = results[0]
    for loss, grads in results[1:]:
        assert torch.allclose(loss, loss0, atol=1e-6)
        assert all(torch.allclose(g, h, atol=1e-6) for g, h in zip(grads, grads0, strict=True))


def test_shape_builders_build_any_decoder_shape_on_the_meta_device() -> None:
    """``torch_llama.py:build_llama_2_7b_s2048_r64_ckpt`` (the name the fine-tuning check asks
    for, ``finetuning_torch.builder_name``) is Llama-2-7B at 2,048 tokens, rank 64, each block
    checkpointed, with no weight allocated; a name it cannot read is no attribute."""
    from gpuscout.predict.finetuning_torch import builder_name

    module = _example("torch_llama")
    dims = WORKLOADS["llama-2-7b"].resolve({"lora_rank": 64, "checkpointing": 1})
    name = builder_name("llama-2-7b", dims)
    assert name == "build_llama_2_7b_s2048_r64_ckpt"
    model = getattr(module, name)()
    assert model.dims == dims and model.checkpointing
    assert {p.device.type for p in model.parameters()} == {"meta"}
    unfused = getattr(module, builder_name("llama-3.1-8b", {"seq_len": 8192, "lora_rank": 0},
                                           fused_attention=False))()  # fmt: skip
    assert unfused.dims["seq_len"] == 8192 and not unfused.blocks[0].fused_attention
    for wrong in ("build_gpt2_s1024_r0", "build_llama_9b_s2048_r0", "build_llama_2_7b"):
        with pytest.raises(AttributeError, match=wrong):
            getattr(module, wrong)
