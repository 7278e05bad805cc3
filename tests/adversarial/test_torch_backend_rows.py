"""Rows for ``--backend torch`` (issue 44's first slice: ``bench`` trains Keras on PyTorch, on
one device): every command and option it cannot run yet is refused by name, in one line,
before anything starts (no child, no database, no cluster variables read, no torch imported).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

NOT = "--backend torch does not take"
ONLY = "--backend torch is not supported yet: the PyTorch backend only measures training"
CASES = [
    Case(("doctor", "--backend", "torch"), 2, f"doctor {ONLY}"),
    Case(("soak", "--backend", "torch", "--minutes", "1"), 2, f"soak {ONLY}"),
    Case(("scout", "--backend", "torch", "--html", "{tmp}/r.html"), 2, f"scout {ONLY}"),
    Case(("predict", "--backend", "torch", "--workload", "mlp"), 2, f"predict {ONLY}"),
    Case(
        ("bench", "--backend", "torch", "--mode", "inference"),
        2,
        f"{NOT} --mode inference: serving is not measured on PyTorch yet",
    ),
    Case(("bench", "--backend", "torch", "--xla"), 2, f"{NOT} --xla: PyTorch steps run eagerly"),
    Case(("bench", "--backend", "torch", "--devices", "2"), 2, f"{NOT} --devices: data parallel"),
    Case(
        (
            "bench",
            "--backend",
            "torch",
            "--workers",
            "localhost:1,localhost:2",
            "--task-index",
            "0",
        ),
        2,
        f"{NOT} --workers/--cluster: DDP over workers",
    ),
    Case(
        ("bench", "--backend", "torch", "--cluster", "slurm"),
        2,
        f"{NOT} --cluster: data parallel (DDP) is not measured on PyTorch yet",
        env={"SLURM_PROCID": ""},  # refused before the (missing) Slurm variables are read
    ),
    Case(
        ("bench", "--backend", "torch", "--devices", "2", "--scaling", "1,2"), 2, f"{NOT} --scaling"
    ),
    Case(
        ("bench", "--backend", "torch", "--global-batch-size", "64"),
        2,
        f"{NOT} --global-batch-size",
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
