"""Rows of issue 32: ``bench --cluster`` in a malformed or contradictory environment.

A row's environment is what the cluster manager would have set (``Case`` has no field for it,
so each row is an environment beside its case, set with monkeypatch before the row runs). Every
refusal is one line naming the variable and its value, exit 2, before TensorFlow is imported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.adversarial.table import Case, run_case

BENCH = ("bench", "--workload", "mlp", "--steps", "5")
SLURM = {
    "SLURM_JOB_NODELIST": "host[01-02]",
    "SLURM_NTASKS": "4",
    "SLURM_TASKS_PER_NODE": "2(x2)",
    "SLURM_PROCID": "3",
}
SKY = {"SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2", "SKYPILOT_NODE_RANK": "0"}
TF = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"index": 0}})}

ROWS: list[tuple[dict[str, str], Case]] = [
    ({**SLURM, "SLURM_PROCID": "7"},
     Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_PROCID=7 with SLURM_NTASKS=4")),
    ({**SLURM, "SLURM_JOB_NODELIST": "host[01"},
     Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_JOB_NODELIST='host[01' is not a Slurm")),
    ({**SLURM, "SLURM_TASKS_PER_NODE": "2(x3)"},
     Case((*BENCH, "--cluster", "auto"), 2, "SLURM_TASKS_PER_NODE=2(x3) names 3 nodes")),
    ({}, Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_PROCID is not set")),
    ({}, Case((*BENCH, "--cluster", "skypilot"), 2, "SKYPILOT_NODE_IPS is not set")),
    ({**SKY, "SKYPILOT_NODE_RANK": "-1"},
     Case((*BENCH, "--cluster", "skypilot"), 2, "SKYPILOT_NODE_RANK='-1' is not a whole")),
    ({"TF_CONFIG": "[1, 2"},
     Case((*BENCH, "--cluster", "tf-config"), 2, "TF_CONFIG='[1, 2' is not JSON")),
    (TF, Case((*BENCH, "--cluster", "tf-config"), 2, 'TF_CONFIG\'s task {"index": 0}')),
    (SKY, Case((*BENCH, "--cluster", "skypilot", "--workers", "a:1,b:1"), 2,
               "--cluster skypilot and --workers contradict each other")),
    (SKY, Case((*BENCH, "--cluster", "auto", "--task-index", "0"), 2,
               "--cluster auto and --task-index contradict")),
    ({}, Case((*BENCH, "--port-base", "30000"), 2, "--port-base 30000 needs --cluster")),
    ({}, Case((*BENCH, "--cluster", "manual", "--port-base", "30000"), 2,
              "--port-base 30000 with --cluster manual")),
    (SKY, Case((*BENCH, "--cluster", "skypilot", "--port-base", "80"), 2,
               "argument --port-base: must be a whole number at least 1,024")),
    ({**SKY, "SKYPILOT_NODE_IPS": "127.0.0.1\n127.0.0.1"},
     Case((*BENCH, "--cluster", "skypilot", "--port-base", "65535", "--json"), 2,
          "--port-base 65535 with 2 workers on 127.0.0.1: their ports would pass 65535")),
    ({}, Case((*BENCH, "--cluster", "kubernetes"), 2, "invalid choice: 'kubernetes'")),
    ({}, Case(("launch", "--workers", "2", "--", "bench", "--cluster", "slurm"), 2,
              "'--cluster' after 'bench': launch sets it")),
]  # fmt: skip


@pytest.mark.parametrize(("env", "case"), ROWS, ids=[c.id for _, c in ROWS])
def test_row(
    env: dict[str, str], case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):  # whatever this machine's own environment has
        if name == "TF_CONFIG" or name.startswith(("SLURM_", "SKYPILOT_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    run_case(case, tmp_path, monkeypatch)
