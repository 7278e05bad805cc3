"""Rows for ``--backend`` (issue 19): an unknown backend, and what the JAX backend cannot do yet,
each refused by name with the reason, before any framework is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

NOT = "--backend jax does not take"
CASES = [
    Case(("bench", "--backend", "pytorch"), 2, "invalid choice: 'pytorch'"),
    Case(("scout", "--backend", "JAX"), 2, "invalid choice: 'JAX'"),
    Case(("bench", "--backend", "jax", "--mode", "inference"), 2, f"{NOT} --mode inference"),
    Case(("bench", "--backend", "jax", "--devices", "2"), 2, f"{NOT} --devices/--workers"),
    Case(("bench", "--backend", "jax", "--loop", "fit"), 2, f"{NOT} --loop fit"),
    Case(
        ("bench", "--backend", "jax", "--workload", "input-bound-demo"),
        2,
        f"{NOT} --workload input-bound-demo: its input pipeline is tf.data",
    ),
    Case(("scout", "--backend", "jax", "--measure", "input-bound-demo=5"), 2, NOT),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
