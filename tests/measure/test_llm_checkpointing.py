"""Gradient checkpointing and fused attention in the decoder's JAX step, at llama-tiny's size.

One process on JAX (Keras picks its backend once): the checkpointed step trains exactly as the
plain one does, and the traced profiles (what ``predict`` times) count the recomputed forward
pass, keep only the blocks' inputs and the logits, and, in 16-bit, cost the attention as one
fused kernel with FlashAttention-2's FLOPs instead of XLA's L x L scores.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

_ON_JAX = """
import json, numpy as np
from gpuscout.measure.backends.jax.runtime import import_jax
from gpuscout.measure.backends.jax.step import train_step
from gpuscout.measure.backends.keras.models import BUILDERS
from gpuscout.predict.fit_options import checkpointed_activations
from gpuscout.predict.predictor import memory_needed
from gpuscout.predict.profile_trace import compute
from gpuscout.workloads import get_workload
jax = import_jax()
w = get_workload("llama-tiny")
rng = np.random.default_rng(0)
x = rng.integers(0, 256, (2, 32)).astype("int32")
y = rng.integers(0, 256, (2, 32)).astype("int32")
plain = BUILDERS["llama-tiny"](w.resolve({}))
checkpointed = BUILDERS["llama-tiny"](w.resolve({"checkpointing": 1}))
checkpointed.model.set_weights(plain.model.get_weights())
trained = {}
for name, built in (("plain", plain), ("checkpointed", checkpointed)):
    step, state = train_step(jax, built, "fp32")
    losses = []
    for _ in range(3):
        state, loss = step(state, x, y)
        losses.append(float(loss))
    trained[name] = {"losses": losses, "weights": [np.asarray(v).tolist() for v in state[0][:3]]}
profiles = {}
for label, precision, dims in (
    ("fp32", "fp32", {}), ("fp32 ckpt", "fp32", {"checkpointing": 1}),
    ("lora", "fp32", {"lora_rank": 4}), ("lora ckpt", "fp32", {"lora_rank": 4, "checkpointing": 1}),
    ("bf16", "mixed_bfloat16", {}),
):
    p = compute("llama-tiny", {"seq_len": 256, **dims}, 2, precision)
    profiles[label] = {
        "matmul": p.flops["matmul"], "bytes": sum(p.bytes.values()),
        "saved": p.saved_activation_bytes, "memory": memory_needed(p),
        "estimate": checkpointed_activations(p), "method": p.method,
        "square": [[k.flops, k.count] for k in p.kernels if k.op == "matmul" and k.m == k.n == 256],
    }
print(json.dumps({"trained": trained, "profiles": profiles}))
"""


def _run() -> dict:  # type: ignore[type-arg]
    flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": flags}
    proc = subprocess.run([sys.executable, "-c", _ON_JAX], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_checkpointing_trains_the_same_and_fused_attention_is_costed_as_one_kernel() -> None:
    """Trained 3 steps from the same weights, the checkpointed step gives the plain step's
    losses and weights (it only recomputes); traced at 256 tokens, it does one more forward
    pass of matmul work (full: about 4/3 of the plain step; LoRA, whose backward skips the
    base's weight gradients: more), keeps a tenth of the activations and needs less memory,
    close to what predict's fit options estimated for it (fit_options.py). In bfloat16 the
    attention is the fused kernel: its square (L x L) kernels are the forward and backward
    calls only, at FlashAttention-2's FLOPs for a causal mask (2 tiles of 128: 3/4 computed),
    and nothing of L x L is kept for the backward pass."""
    got = _run()
    plain, ckpt = got["trained"]["plain"], got["trained"]["checkpointed"]
    assert all(math.isfinite(v) for v in plain["losses"])
    assert all(
        math.isclose(a, b, rel_tol=1e-5)
        for a, b in zip(plain["losses"], ckpt["losses"], strict=True)
    )
    for a, b in zip(plain["weights"], ckpt["weights"], strict=True):
        assert max(abs(u - v) for u, v in zip(_flat(a), _flat(b), strict=True)) < 1e-5
    p = got["profiles"]
    full = p["fp32 ckpt"]["matmul"] / p["fp32"]["matmul"]
    lora = p["lora ckpt"]["matmul"] / p["lora"]["matmul"]
    assert 1.2 < full < 1.4 and lora > full, (full, lora)
    for plain_label in ("fp32", "lora"):
        kept, whole = p[f"{plain_label} ckpt"], p[plain_label]
        assert kept["saved"] < 0.1 * whole["saved"]
        assert kept["memory"] < whole["memory"]
        # the estimate predict offered before tracing it, within a third
        ckpt_act = kept["memory"] - (whole["memory"] - whole["saved"])
        assert abs(ckpt_act / whole["estimate"] - 1) < 1 / 3, (ckpt_act, whole["estimate"])
    assert "gradient checkpointing" in p["fp32 ckpt"]["method"]
    assert "fused (flash) kernel" in p["bf16"]["method"]
    assert "fused" not in p["fp32"]["method"]
    # llama-tiny: 2 layers, 4 heads of 16, batch 2, 256 tokens
    forward = 4.0 * 2 * 4 * 256 * 256 * 16 * 3 / 4
    fused = sorted(p["bf16"]["square"])
    assert fused == sorted([[forward, 2], [2.5 * forward, 2]]), fused
    assert p["bf16"]["saved"] < 0.4 * p["fp32"]["saved"]


def _flat(values: object) -> list[float]:
    if isinstance(values, list):
        return [x for v in values for x in _flat(v)]
    return [float(values)]  # type: ignore[arg-type]
