"""Rows for the decoder LLM workloads (issue 33): a mode the workload cannot run, a rank
without LoRA or past the hidden size, a context or a model this machine cannot hold. Each is
one line naming the value, exit 2, before TensorFlow or JAX starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

TINY = ("bench", "--workload", "llama-tiny")

CASES = [
    Case(("bench", "--workload", "mlp", "--mode", "lora"), 2,
         "--mode lora: workload 'mlp' has no LoRA adapters"),
    Case(("bench", "--model", "m.py:build", "--mode", "lora"), 2, "not to --model"),
    Case((*TINY, "--lora-rank", "8"), 2, "--lora-rank 8 applies to --mode lora only"),
    Case((*TINY, "--mode", "inference", "--lora-rank", "8"), 2,
         "--lora-rank 8 applies to --mode lora only, not --mode inference"),
    Case((*TINY, "--mode", "lora", "--lora-rank", "65"), 2,
         "llama-tiny takes lora_rank up to 64"),
    Case((*TINY, "--mode", "lora", "--lora-rank", "0"), 2, "--lora-rank"),
    Case((*TINY, "--seq-len", "4097"), 2, "llama-tiny takes seq_len up to 4,096"),
    Case(("bench", "--workload", "llama-2-7b", "--seq-len", "8192"), 2,
         "llama-2-7b takes seq_len up to 4,096 (llama-2-7b's context length)"),
    # 8.0 B weights in float32 with AdamW: more than any 24 GB machine holds, CPU or not
    Case(("bench", "--workload", "llama-3.1-8b", "--device", "CPU:0"), 2,
         "llama-3.1-8b (every weight trained, fp32) holds 128 GB of weights"),
    Case(("bench", "--workload", "llama-3.1-8b", "--mode", "lora", "--device", "CPU:0"), 2,
         "llama-3.1-8b (LoRA rank 64, fp32) holds 35 GB of weights"),
    Case(("predict", "--workload", "llama-3.1-8b", "--mode", "lora", "--lora-rank", "5000"), 2,
         "llama-3.1-8b takes lora_rank up to 4,096"),
    Case(("predict", "--workload", "gpt2", "--mode", "lora"), 2,
         "--mode lora: workload 'gpt2' has no LoRA adapters"),
    Case(("predict", "--workload", "llama-tiny", "--lora-rank", "4"), 2,
         "--lora-rank 4 applies to --mode lora only"),
    Case(("bench", "--workload", "llama-8b"), 2, "unknown workload 'llama-8b'"),
    Case(("predict", "--workload", "bert-base", "--checkpointing"), 2,
         "--checkpointing recomputes the blocks of the decoder LLM workloads, not of "
         "'bert-base'"),
    Case(("predict", "--model", "m.py:build", "--checkpointing"), 2,
         "--checkpointing recomputes the blocks of the decoder LLM workloads, not of --model"),
    # 8B trained fully at batch 1 fits no GPU asked: the fix is not "lower --batch-size"
    Case(("predict", "--workload", "llama-3.1-8b", "--precision", "mixed_bfloat16", "--gpus",
          "rtx-4090,a100-80gb-sxm"), 2,
         "at batch 1 try --mode lora, a lower --seq-len, or a GPU with more memory"),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
