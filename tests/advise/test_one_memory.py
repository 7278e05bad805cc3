"""One memory figure for one model and settings (issue 42, item 7): Llama-2-7B with rank-64
LoRA at sequence 2048, micro-batch 1, described by its shape (``memory --params``), named
(``memory --workload``), predicted (``predict``) and advised (``advise``): the same GB each
time; a setting no compiled step is at hand for is the shape's estimate, said, with fused
attention as the traced steps run it; and a GPU dropped for memory says what would fit it."""

from __future__ import annotations

import json

import pytest

from gpuscout.advise.llm_memory import llm_memory
from gpuscout.advise.memory import Transformer, memory_fit
from tests.conftest import run_cli

SHAPE = ("--params", "7e9", "--layers", "32", "--hidden", "4096", "--heads", "32")


def test_the_same_model_and_settings_get_one_figure_in_every_command() -> None:
    lora = ("--mode", "lora")
    shape = run_cli("memory", *SHAPE, *lora, "--lora-rank", "64", "--seq-len", "2048",
                    "--micro-batch", "1", "--json", block_tf=True)  # fmt: skip
    named = run_cli("memory", "--workload", "llama-2-7b", *lora, "-b", "1", "--json",
                    block_tf=True)  # fmt: skip
    predicted = run_cli("predict", "--workload", "llama-2-7b", *lora, "-b", "1", "--gpu",
                        "a100-40gb", "--json", block_tf=True)  # fmt: skip
    advised = run_cli("advise", "--workload", "llama-2-7b", *lora, "-b", "1", "--samples",
                      "1000", "--json", block_tf=True)  # fmt: skip
    for r in (shape, named, predicted, advised):
        assert r.code == 0, r.err
    by_shape = sum(json.loads(shape.out)["breakdown_gb"].values())
    assert (
        "the shape of llama-2-7b, counted from its compiled step"
        in (json.loads(shape.out)["model"])
    )
    by_name = sum(json.loads(named.out)["breakdown_gb"].values())
    by_predict = predicted.json()[0]["memory_needed_gb"]
    by_advise = json.loads(advised.out)["ranked"][0]["memory_gb"]
    assert by_shape == pytest.approx(by_name, abs=0.01)
    assert by_name == pytest.approx(by_predict, abs=0.01) == pytest.approx(by_advise, abs=0.01)
    # the 24 GB cards it leaves out, and what brings them back
    notes = json.loads(advised.out)["assumptions"]
    (said,) = [n for n in notes if n.startswith("rtx-3090, ") and "(24 GB)" in n]
    assert "would fit with gradient checkpointing" in said and "(--checkpointing)" in said


def test_an_estimate_says_so_and_never_advises_what_is_already_done() -> None:
    m = Transformer(7e9, 32, 4096, 32, seq_len=2048, batch=1, mode="lora")  # rank 16
    counted = llm_memory(m)
    assert "estimated from its shape" in counted.what
    assert any(n.startswith("attention as a fused (flash) kernel") for n in counted.notes)
    assert any("memory --workload llama-2-7b" in n for n in counted.notes)
    fit = memory_fit(counted.breakdown, 8.0, shardable=False, mode="lora")
    assert fit.verdict == "does not fit" and fit.notes == [
        "lower the batch or sequence length, use activation checkpointing, QLoRA, or more GPUs"
    ]
    done = memory_fit(counted.breakdown, 8.0, False, mode="qlora", checkpointing=True)
    assert done.notes == ["lower the batch or sequence length, or more GPUs"]
    unfused = llm_memory(Transformer(7e9, 32, 4096, 32, 2048, 1, "lora", fused_attention=False))
    extra = 5 * 32 * 2048**2 * 32  # 5·a·s²·b bytes a layer, 32 layers
    assert sum(unfused.breakdown.values()) - sum(counted.breakdown.values()) == pytest.approx(extra)
