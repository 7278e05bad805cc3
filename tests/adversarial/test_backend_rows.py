"""Rows for ``--backend`` (issue 19): an unknown backend, and what the JAX backend cannot do yet,
each refused by name with the reason, before any framework is imported (issue 19's second
part: model.fit, inference, your own model and soak run on JAX now)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

NOT = "--backend jax does not take"
MODELS = Path(__file__).parents[1] / "data" / "user_models.py"
CASES = [
    Case(("bench", "--backend", "pytorch"), 2, "invalid choice: 'pytorch'"),
    Case(("scout", "--backend", "JAX"), 2, "invalid choice: 'JAX'"),
    Case(
        ("bench", "--backend", "jax", "--mode", "inference", "--serving", "saved_model"),
        2,
        f"{NOT} --serving saved_model: a SavedModel is TensorFlow's serving format",
    ),
    Case(("bench", "--backend", "jax", "--devices", "2"), 2, f"{NOT} --devices/--workers"),
    Case(
        (
            "bench",
            "--backend",
            "jax",
            "--model",
            f"{MODELS}:uncompiled_classifier",
            "--data",
            f"{MODELS}:dataset",
        ),
        2,
        f"{NOT} --data: it returns a tf.data.Dataset",
    ),
    Case(("doctor", "--backend", "jax"), 2, "doctor does not take --backend jax"),
    Case(("soak", "--backend", "torch"), 2, "invalid choice: 'torch'"),
    Case(("predict", "--backend", "jax", "--workload", "nope"), 2, "unknown workload"),
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
