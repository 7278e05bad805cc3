"""Rows for ``--backend`` (issue 19): an unknown backend, and what the JAX backend cannot do yet,
each refused by name with the reason, before any framework is imported (model.fit, inference,
your own model and data, the input-bound demo, soak, doctor and --devices run on JAX now)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

NOT = "--backend jax does not take"
CASES = [
    Case(("bench", "--backend", "pytorch"), 2, "invalid choice: 'pytorch'"),
    Case(("scout", "--backend", "JAX"), 2, "invalid choice: 'JAX'"),
    Case(
        ("bench", "--backend", "jax", "--mode", "inference", "--serving", "saved_model"),
        2,
        f"{NOT} --serving saved_model: a SavedModel is TensorFlow's serving format",
    ),
    # --workers runs on JAX now (jax.distributed): its refusals are in test_jax_workers_rows.py
    Case(
        ("bench", "--backend", "jax", "--devices", "2", "--loop", "fit"),
        2,
        "--loop fit with --devices on JAX: data-parallel JAX runs use gpuscout's own step",
    ),
    Case(
        ("bench", "--backend", "jax", "--devices", "GPU:0,GPU:1", "--global-batch-size", "7"),
        2,
        "--global-batch-size 7 does not split evenly over 2 replicas",
    ),
    Case(
        ("doctor", "--backend", "jax", "--skip", "tf.function"),
        2,
        "--skip 'tf.function' is not a fix doctor tries on jax",
    ),
    Case(("doctor", "--backend", "jax", "--skip", "jax.jt"), 2, "Did you mean 'jax.jit'"),
    Case(
        (
            "bench",
            "--backend",
            "jax",
            "--workload",
            "input-bound-demo",
            "--devices",
            "3",
            "--batch-size",
            "1024",
        ),
        2,
        "batch 3,072 is larger than the 2,048 samples of input-bound-demo's epoch",
    ),
    Case(
        (
            "bench",
            "--workload",
            "input-bound-demo",
            "--global-batch-size",
            "4096",
            "--devices",
            "2",
        ),
        2,
        "batch 4,096 is larger than the 2,048 samples",
    ),
    # --backend torch is a backend now: its refusals are in test_torch_backend_rows.py
    Case(("predict", "--backend", "jax", "--workload", "nope"), 2, "unknown workload"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
