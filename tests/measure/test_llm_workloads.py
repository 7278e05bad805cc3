"""The Llama-style decoder workloads: their shapes, LoRA, FLOPs and the host-memory guard.

Real Keras code on TensorFlow (this process) and on JAX (a process of its own: Keras picks its
backend once), at llama-tiny's size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.limits import check_fits_host
from gpuscout.workloads import WORKLOADS, get_workload, run_shape
from gpuscout.workloads.llm import (
    LORA_RANK,
    LORA_TARGETS,
    adapter_params,
    base_params,
    llama_training_flops,
    mode_dims,
    weight_state_bytes,
)
from tests.conftest import run_in_process

TINY_LORA = {"lora_rank": 4}

# The same 3 steps on JAX, with gpuscout's own JAX train step (what bench times there): which
# variables changed, and the trainable count. One thread: the other test process keeps its core.
_ON_JAX = """
import json, numpy as np
from gpuscout.measure.backends.jax.step import train_step
from gpuscout.measure.backends.jax.runtime import import_jax
from gpuscout.measure.backends.keras.models import BUILDERS
from gpuscout.workloads import get_workload
jax = import_jax()
w = get_workload("llama-tiny")
built = BUILDERS["llama-tiny"](w.resolve({"lora_rank": 4}))
model = built.model
before = {v.path: np.array(v.value) for v in model.weights}
step, state = train_step(jax, built, "fp32")
rng = np.random.default_rng(0)
x = rng.integers(0, 256, (2, 32)).astype("int32")
y = rng.integers(0, 256, (2, 32)).astype("int32")
for _ in range(3):
    state, loss = step(state, x, y)
trained, frozen, _ = state
after = dict(zip([v.path for v in model.trainable_variables], trained))
after |= dict(zip([v.path for v in model.non_trainable_variables], frozen))
changed = sorted(k for k in before if not np.array_equal(before[k], np.asarray(after[k])))
# predict's trace from shapes alone against the trace of the built model: the same step
from gpuscout.measure.backends.jax.hlo import abstract_step_hlo, step_hlo
from gpuscout.predict.hlo import step_cost
traced = {}
for how, trace in (("abstract", abstract_step_hlo), ("built", step_hlo)):
    ir = trace("llama-tiny", {"lora_rank": 4}, 2, "fp32")
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    traced[how] = [cost.flops["matmul"], ir.params, ir.param_bytes, ir.optimizer_state_bytes,
                   ir.frozen_bytes]
print(json.dumps({"changed": changed, "trainable": sum(int(np.prod(v.shape))
      for v in model.trainable_variables), "loss": float(loss), "traced": traced}))
"""


def test_shapes_have_the_published_parameter_counts() -> None:
    """Each release's parameter count, as its model card and safetensors index give it, follows
    from the shapes in the registry: the shapes are right, GQA and tying included."""
    published = {
        "llama-2-7b": 6_738_415_616,
        "llama-3.2-1b": 1_235_814_400,
        "llama-3.2-3b": 3_212_749_824,
        "llama-3.1-8b": 8_030_261_248,
    }
    for name, count in published.items():
        assert base_params(WORKLOADS[name].resolve({})) == count, name
    # QLoRA's adapters on every linear layer of Llama-2-7B at rank 64: 160 M trainable
    seven = WORKLOADS["llama-2-7b"].resolve({"lora_rank": LORA_RANK})
    assert adapter_params(seven) == 32 * 64 * (4 * 2 * 4096 + 3 * (4096 + 11008))
    # LoRA's step: the base's weight gradients are not computed (2x, not 3x, its forward)
    full, lora = (llama_training_flops(WORKLOADS["llama-3.1-8b"].resolve(d))
                  for d in ({}, {"lora_rank": 64}))  # fmt: skip
    assert 0.66 < lora / full < 0.72
    # 16 bytes a trained weight (fp32 weight, gradient, two AdamW moments), 4 a frozen one
    assert weight_state_bytes(seven) == 4 * 6_738_415_616 + 16 * adapter_params(seven)
    # the frozen base in the compute dtype under mixed precision (keras/llama.py holds it so)
    assert weight_state_bytes(seven, "mixed_bfloat16") == 2 * 6_738_415_616 + 16 * adapter_params(
        seven
    )


def test_modes_and_sizes_are_checked_before_anything_starts() -> None:
    assert mode_dims("llama-tiny", None, "lora", None) == {"lora_rank": LORA_RANK}
    assert mode_dims("llama-tiny", None, "lora", 8) == {"lora_rank": 8}
    assert mode_dims("mlp", None, "train", None) == {}
    for args, says in (
        (("mlp", None, "lora", None), "workload 'mlp' has no LoRA adapters"),
        (("llama-tiny", None, "train", 8), "--lora-rank 8 applies to --mode lora only"),
        (("mlp", "m.py:build", "lora", None), "not to --model"),
    ):
        with pytest.raises(UserError, match=says):
            mode_dims(*args)
    tiny = get_workload("llama-tiny")
    assert tiny.resolve({"lora_rank": 0})["lora_rank"] == 0  # 0: full fine-tuning
    with pytest.raises(UserError, match="lora_rank must be non-negative, got -1"):
        tiny.resolve({"lora_rank": -1})
    with pytest.raises(UserError, match="takes seq_len up to 4,096"):
        tiny.resolve({"seq_len": 4097})
    eight = WORKLOADS["llama-3.1-8b"].resolve({})
    with pytest.raises(UserError, match=r"holds 128 GB of weights.* has 24 GB available"):
        check_fits_host("llama-3.1-8b", eight, "fp32", 24e9, "fix")
    check_fits_host("llama-3.1-8b", eight, "fp32", 200e9, "fix")  # a machine that holds it
    gpt2 = WORKLOADS["gpt2-large"].resolve({})
    check_fits_host("gpt2-large", gpt2, "fp32", 1.0, "fix")  # its size is not known ahead
    assert run_shape("llama-tiny", TINY_LORA) == (32, "sequence 32 tokens · LoRA rank 4, "
                                                       "base frozen")  # fmt: skip
    assert run_shape("bert-base", {}) == (None, "sequence 128 tokens")  # a sample is a label
    assert run_shape("mlp", {}) == (None, "")


def test_lora_trains_the_adapters_and_leaves_the_base_on_both_backends() -> None:
    """3 steps of gpuscout's own train step (bench's) on each backend: with LoRA only the
    adapters change, every base weight (embedding, norms, projections, head) stays bit for bit
    where it was; full fine-tuning changes every weight. The JAX process also traces the step
    from shapes alone, as predict does for the large decoders, against the built model's."""
    flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": flags}
    on_jax = subprocess.Popen([sys.executable, "-c", _ON_JAX], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    from gpuscout.measure.backends.keras.models import BUILDERS
    from gpuscout.measure.backends.tensorflow.runtime import import_tensorflow
    from gpuscout.measure.backends.tensorflow.train import train_step_function

    tf = import_tensorflow()
    w = get_workload("llama-tiny")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 32)).astype("int32")
    y = rng.integers(0, 256, (2, 32)).astype("int32")
    changed = {}
    for mode, dims in (("lora", TINY_LORA), ("full", {})):
        built = BUILDERS["llama-tiny"](w.resolve(dims))
        model = built.model
        before = {v.path: np.array(v.numpy()) for v in model.weights}
        step = train_step_function(tf, built, "fp32", jit_compile=False)
        for _ in range(3):
            step(x, y)
        now = {v.path: v.numpy() for v in model.weights}
        changed[mode] = {k for k in before if not np.array_equal(before[k], now[k])}
        if mode == "lora":
            lora_model = model
    adapters = {v.path for v in lora_model.trainable_variables}
    assert {p.rsplit("_", 2)[0] for p in adapters} == set(LORA_TARGETS)  # every linear layer
    assert {p.split("/")[1] for p in adapters} == {"lora_a", "lora_b"}
    assert changed["lora"] == adapters
    assert sum(int(np.prod(v.shape)) for v in lora_model.trainable_variables) == adapter_params(
        w.resolve(TINY_LORA)
    )
    assert len(changed["full"]) == len(lora_model.weights) - len(adapters)  # every base weight
    out, err = on_jax.communicate(timeout=300)
    assert on_jax.returncode == 0, err[-3000:]
    jax = json.loads(out.strip().splitlines()[-1])
    assert set(jax["changed"]) == adapters and np.isfinite(jax["loss"])
    assert jax["trainable"] == adapter_params(w.resolve(TINY_LORA))
    # The step predict traces from shapes alone (no weight allocated) is the built model's:
    # the same FLOPs and sizes, the frozen base counted apart (fp32 here: 4 bytes a weight)
    abstract, built = jax["traced"]["abstract"], jax["traced"]["built"]
    assert abstract == built
    assert abstract[4] == 4 * base_params(w.resolve(TINY_LORA))


def test_the_traced_step_counts_what_the_analytic_count_says() -> None:
    """The TensorFlow step's HLO, read by predict's parser: full fine-tuning is 3 x forward
    less the first layer's input gradient (nobody needs the embedding's), LoRA 2 x the frozen
    base's forward plus 3 x attention and adapters, less the same. Within 15 % below and never
    above, as for the other transformer workloads (tests/predict/test_hlo.py)."""
    from gpuscout.measure.backends.tensorflow.hlo import step_hlo
    from gpuscout.predict.hlo import step_cost

    w = get_workload("llama-tiny")
    counted = {}
    for label, dims in (("full", {}), ("lora", TINY_LORA)):
        analytic = llama_training_flops(w.resolve(dims))
        ir = step_hlo("llama-tiny", w.resolve(dims), 2, "fp32")
        counted[label] = step_cost(ir.hlo, forward_scope=ir.model_name).flops["matmul"] / 2
        assert analytic * 0.85 <= counted[label] <= analytic * 1.001, (label, counted, analytic)
    assert counted["lora"] < 0.8 * counted["full"]  # no weight gradients for the base


def test_bench_lora_on_jax_stores_the_rank_and_shows_tokens() -> None:
    """The command a user runs: one measured run on JAX, its rank stored with the run, its
    table in tokens/s with the sequence and the mode named."""
    r = run_in_process("bench", "--workload", "llama-tiny", "--mode", "lora", "--lora-rank", "4",
                       "--backend", "jax", "--steps", "3", "--warmup-steps", "1", "--json",
                       stderr_file=True)  # fmt: skip
    assert r.code == 0, r.err
    run = json.loads(r.out)
    assert run["status"] == "ok" and run["config"]["dims"] == {"lora_rank": 4}
    assert run["config"]["mode"] == "train"
    shown = run_in_process("runs", "show", str(run["id"]))
    assert "tokens/s (median)" in shown.out
    assert "sequence 32 tokens · LoRA rank 4, base frozen" in shown.out
