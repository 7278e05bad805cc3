"""Rows for the transformer workloads of issue 18: GPT-2's context is 1,024 tokens (its learned
position table has that many rows), so a longer --seq-len is refused by every command that
takes one, before TensorFlow is imported; a misspelt name gets the nearest one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

TOO_LONG = "gpt2 takes seq_len up to 1,024"
CASES = [
    Case(("bench", "--workload", "gpt2", "--seq-len", "2000"), 2, TOO_LONG),
    Case(("predict", "--workload", "gpt2", "--seq-len", "2000"), 2, TOO_LONG),
    Case(
        ("memory", "--workload", "gpt2-large", "--seq-len", "4096"), 2, "gpt2-large takes seq_len"
    ),
    Case(("doctor", "--workload", "gpt2-medium", "--seq-len", "1025"), 2, "got 1,025"),
    Case(("bench", "--workload", "gpt-2"), 2, "Did you mean 'gpt2'?"),
    Case(("predict", "--workload", "bert_large"), 2, "Did you mean 'bert-large'?"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
