"""Predicting a decoder LLM's fine-tuning from the shipped profiles, traced from shapes alone."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

GPUS = "rtx-4090,rtx-5090,a100-80gb-sxm,h100-sxm"


def test_an_8b_lora_prediction_needs_no_framework_and_says_what_fits() -> None:
    """Llama-3.1-8B with LoRA at 2,048 tokens, from the shipped profile: TensorFlow, Keras and
    JAX blocked, so nothing is traced. Its memory holds the frozen base in bfloat16 (8.03 B
    weights, 16.1 GB) beside the adapters, their AdamW state and the activations: an 80 GB
    GPU holds one sequence, a 24 or 32 GB one does not. Faster GPUs are faster, and the output
    says the step was traced from shapes alone, with the attention as the fused kernel a GPU
    runs, and how far it was from published fine-tuning throughput."""
    args = ("--workload", "llama-3.1-8b", "--mode", "lora", "--seq-len", "2048")
    r = run_cli("predict", *args, "--precision", "mixed_bfloat16", "--gpus", GPUS, "--json",
                block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    rows = {row["gpu"]: row for row in json.loads(r.out)}
    assert [rows[g]["fits_memory"] for g in GPUS.split(",")] == [False, False, True, True]
    assert all(row["memory_needed_gb"] > 16.1 for row in rows.values())
    speeds = [rows[g]["samples_per_second"] for g in GPUS.split(",")]
    assert speeds == sorted(speeds)
    notes = " ".join(rows["h100-sxm"]["common_assumptions"])
    assert "from shapes alone" in notes and "fused (flash) kernel" in notes
    assert "checked on 11 published fine-tuning rows" in notes
    # What would fit where it does not: gradient checkpointing first (16.1 GB of frozen base,
    # 2.7 GB of adapters and their state, the layers' inputs and one layer's activations), then
    # QLoRA's 4-bit base, with checkpointing too, then sharding over GPUs; nothing for the rows
    # that fit
    ways = rows["rtx-4090"]["fits_with"]
    assert ways[0]["how"] == "gradient checkpointing"
    assert 18.1 < ways[0]["memory_needed_gb"] < 0.9 * 24  # 24 GB, 90 % usable
    assert [w["how"] for w in ways][1:3] == ["QLoRA (a 4-bit base)",
                                             "QLoRA and gradient checkpointing"]  # fmt: skip
    assert ways[2]["memory_needed_gb"] < ways[0]["memory_needed_gb"] - 10  # 16 GB -> 4.3 GB
    assert rows["h100-sxm"]["fits_with"] == []
    assert "rtx-4090 (21.6 GB usable) would fit with: gradient checkpointing" in notes


def test_a_checkpointed_8b_lora_step_fits_a_4090_as_the_estimate_said() -> None:
    """``--checkpointing`` predicts the traced checkpointed step (shipped: the profile of the
    named job llm-lora-8b): it fits the RTX 4090 the plain step does not, needs about what
    the plain step's fit options estimated for checkpointing, and is slower for the forward
    pass it recomputes (about a third more work)."""
    base = ("predict", "--workload", "llama-3.1-8b", "--mode", "lora", "--precision",
            "mixed_bfloat16", "--gpus", "rtx-4090", "--json")  # fmt: skip
    plain, ckpt = (run_cli(*base, *extra, block_tf=True) for extra in ((), ("--checkpointing",)))
    assert plain.code == 0 and ckpt.code == 0, plain.err + ckpt.err
    p, c = json.loads(plain.out)[0], json.loads(ckpt.out)[0]
    estimate = p["fits_with"][0]
    assert estimate["how"] == "gradient checkpointing" and not p["fits_memory"]
    assert c["fits_memory"] and c["fits_with"] == []
    assert abs(c["memory_needed_gb"] / estimate["memory_needed_gb"] - 1) < 0.15
    assert 0.65 < c["samples_per_second"] / p["samples_per_second"] < 0.85
    assert "gradient checkpointing: each block's input and the logits kept" in " ".join(
        c["common_assumptions"]
    )
    # an epoch's energy: the RTX 4090's 450 W TDP at the sourced 80 % for the epoch's time
    assert c["epoch_kwh"] == pytest.approx(450 * 0.8 * c["epoch_seconds"] / 3.6e6, rel=1e-6)
    assert "energy: the GPUs draw 80% of their TDP" in " ".join(c["common_assumptions"])
