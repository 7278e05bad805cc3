"""Rows for ``--backend torch`` (issue 44: ``bench`` trains Keras on PyTorch, on one device or
over workers with DDP; ``doctor`` and ``soak`` run on it too): every command and option it
cannot run yet is refused by name, in one line, before anything starts (no child, no database,
no torch imported).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

NOT = "--backend torch does not take"
WORKERS = "localhost:1,localhost:2"
KERAS = "--backend torch takes a plain PyTorch --model so far: a Keras model's step"
CASES = [
    Case(
        ("doctor", "--backend", "torch", "--xla"),
        2,
        "doctor --backend torch does not take --xla: XLA is not PyTorch's compiler",
    ),
    Case(
        ("doctor", "--backend", "torch", "--model", "{tmp}/m.py:build"),
        2,
        "is a plain PyTorch model (its file imports torch, not Keras): doctor diagnoses a Keras",
        files={"m.py": "import torch\n\ndef build():\n    pass\n"},
    ),
    Case(
        ("doctor", "--backend", "torch", "--skip", "jax.jit"),
        2,
        "--skip 'jax.jit' is not a fix doctor tries on torch",
    ),
    Case(("soak", "--backend", "torch", "--xla"), 2, f"{NOT} --xla: XLA is not PyTorch's"),
    Case(
        ("soak", "--backend", "torch", "--workload", "input-bound-demo"),
        2,
        f"{NOT} --workload input-bound-demo yet: its host input pipeline",
    ),
    Case(
        ("soak", "--backend", "jax", "--model", "{tmp}/m.py:build"),
        2,
        "is a plain PyTorch model (its file imports torch, not Keras), which --backend jax",
        files={"m.py": "import torch\n\ndef build():\n    pass\n"},
    ),
    Case(("scout", "--backend", "torch", "--html", "{tmp}/r.html"), 2, f"scout {KERAS}"),
    Case(
        ("scout", "--backend", "torch", "--measure", "mlp=5", "--html", "{tmp}/r.html"),
        2,
        f"scout {KERAS}",
    ),
    Case(
        ("scout", "--backend", "torch", "--model", "{tmp}/m.py:build", "--html", "{tmp}/r.html"),
        2,
        f"scout {KERAS}",
        files={"m.py": "import keras\n\ndef build():\n    pass\n"},
    ),
    Case(
        ("predict", "--backend", "torch", "--workload", "mlp"),
        2,
        "predict --backend torch captures a plain PyTorch --model; --workload mlp is a Keras",
    ),
    Case(
        ("bench", "--backend", "torch", "--mode", "inference"),
        2,
        f"{NOT} --mode inference: serving is not measured on PyTorch yet",
    ),
    Case(("bench", "--backend", "torch", "--xla"), 2, f"{NOT} --xla: XLA is not PyTorch's"),
    Case(("bench", "--backend", "torch", "--compile"), 2, "--compile applies to a plain PyTorch"),
    Case(("bench", "--compile"), 2, "--compile applies to a plain PyTorch --model"),
    Case(
        ("bench", "--backend", "jax", "--channels-last"),
        2,
        "--channels-last applies to a plain PyTorch --model",
    ),
    Case(
        ("bench", "--backend", "tensorflow", "--model", "{tmp}/m.py:build"),
        2,
        "is a plain PyTorch model (its file imports torch, not Keras), which --backend tensorflow",
        files={"m.py": "import torch\n\ndef build():\n    pass\n"},
    ),
    Case(
        ("bench", "--model", "{tmp}/m.py:build", "--loop", "fit"),
        2,
        "--loop fit is Keras' model.fit, which a plain PyTorch --model",
        files={"m.py": "import torch.nn\n\ndef build():\n    pass\n"},
    ),
    Case(
        ("bench", "--backend", "torch", "--devices", "2"),
        2,
        f"{NOT} --devices: DDP runs one process per device, and --devices is one process",
    ),
    Case(
        ("bench", "--backend", "torch", "--workers", WORKERS, "--task-index", "0", "--loop", "fit"),
        2,
        "--loop fit with --workers on PyTorch: data-parallel PyTorch runs use gpuscout's own step",
    ),
    Case(
        (
            "bench",
            "--backend",
            "torch",
            "--workers",
            WORKERS,
            "--task-index",
            "0",
            "--model",
            "{tmp}/m.py:build",
        ),
        2,
        "m.py:build yet: DDP runs are measured on Keras models (a built-in --workload, or your "
        "keras.Model)",
        files={"m.py": "import torch\n\ndef build():\n    return torch.nn.Linear(2, 2)\n"},
    ),
    Case(  # --cluster is DDP now: the cluster layer reads (and refuses) Slurm's variables
        ("bench", "--backend", "torch", "--cluster", "slurm"),
        2,
        "SLURM_PROCID is not set: this is not a task of a Slurm job step",
        env={"SLURM_PROCID": ""},
    ),
    Case(
        ("bench", "--backend", "torch", "--devices", "2", "--scaling", "1,2"), 2, f"{NOT} --scaling"
    ),
    Case(
        ("bench", "--backend", "torch", "--global-batch-size", "64"),
        2,
        f"{NOT} --global-batch-size: it splits a batch over workers, and this run has one",
    ),
    Case(
        ("bench", "--backend", "torch", "--model", "{tmp}/m.py:build", "--data", "{tmp}/m.py:data"),
        2,
        f"{NOT} --data: your own data is not fed to PyTorch yet",
        files={"m.py": "def build():\n    pass\n\ndef data():\n    pass\n"},
    ),
    Case(
        ("bench", "--backend", "torch", "--workload", "input-bound-demo"),
        2,
        f"{NOT} --workload input-bound-demo yet: its host input pipeline",
    ),
    Case(("bench", "--backend", "torch", "--workload", "nope"), 2, "unknown workload"),
    Case(("bench", "--backend", "pytorch"), 2, "invalid choice: 'pytorch'"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
