"""Predicting a decoder LLM's fine-tuning from the shipped profiles, traced from shapes alone."""

from __future__ import annotations

import json

from tests.conftest import run_cli

GPUS = "rtx-4090,rtx-5090,a100-80gb-sxm,h100-sxm"


def test_an_8b_lora_prediction_needs_no_framework_and_says_what_fits() -> None:
    """Llama-3.1-8B with LoRA at 2,048 tokens, from the shipped profile: TensorFlow, Keras and
    JAX blocked, so nothing is traced. Its memory holds the frozen base in bfloat16 (8.03 B
    weights, 16.1 GB) beside the adapters, their AdamW state and the activations: an 80 GB
    GPU holds one sequence, a 24 or 32 GB one does not. Faster GPUs are faster, and the output
    says the step was traced from shapes alone and that the workload is not validated."""
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
    assert "from shapes alone" in notes and "not validated on published data" in notes
    # What would fit where it does not: gradient checkpointing first (16.1 GB of frozen base,
    # 2 GB of adapters and their state, the layers' inputs and one layer's activations), then
    # QLoRA with it, then sharding over GPUs; nothing for the rows that fit
    ways = rows["rtx-4090"]["fits_with"]
    assert ways[0]["how"] == "gradient checkpointing"
    assert 18.1 < ways[0]["memory_needed_gb"] < 0.9 * 24  # 24 GB, 90 % usable
    assert [w["how"] for w in ways][1] == "QLoRA and gradient checkpointing"
    assert ways[1]["memory_needed_gb"] < ways[0]["memory_needed_gb"] - 10  # 16 GB -> 4.3 GB
    assert rows["h100-sxm"]["fits_with"] == []
    assert "rtx-4090 (21.6 GB usable) would fit with: gradient checkpointing" in notes
