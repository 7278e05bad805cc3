"""Rows for ``--backend jax --workers`` (issue 32): JAX runs over workers now (jax.distributed),
and what still does not go with them is refused by name, with the reason, before JAX starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

JAX_WORKERS = ("bench", "--backend", "jax", "--workers", "127.0.0.1:1,127.0.0.1:2")
CASES = [
    Case((*JAX_WORKERS, "--task-index", "0", "--loop", "fit"), 2,
         "--loop fit with --workers on JAX: data-parallel JAX runs use gpuscout's own step"),
    Case((*JAX_WORKERS, "--task-index", "0", "--devices", "2"), 2,
         "--devices and --workers together"),
    Case((*JAX_WORKERS, "--task-index", "2"), 2, "--task-index 2 with 2 workers"),
    Case((*JAX_WORKERS, "--task-index", "0", "--mode", "inference"), 2,
         "--mode inference does not take --workers"),
    Case((*JAX_WORKERS, "--task-index", "0", "--data", "{tmp}/d.py:data", "--model",
          "{tmp}/d.py:data"), 2, "--data with --workers is not supported yet",
         files={"d.py": "def data():\n    return []\n"}),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
