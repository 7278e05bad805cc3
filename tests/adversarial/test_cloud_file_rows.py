"""Rows for ``gpuscout cloud`` reading files made elsewhere (issue 43): a task file's names
are plain names, never paths or options, and its autodown minutes a plan's; collect reads
regular files only; plan forwards bench's options in full, refuses its own however spelled,
and checks --scaling against the GPUs of a machine; the estimator predicts no machine plan
would refuse. Each is one line, exit 2 (or 0 where the answer is a row), no TensorFlow."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

PLAN = ("cloud", "plan", "--out", "{tmp}/out", "--gpus", "l4")
BENCH = (*PLAN, "--", "bench")
DRY = ("cloud", "run", "{tmp}", "--dry-run")


def _task(name: str = "gpuscout-l4-1x1", export: str = "gpuscout-l4-1x1.json",
          idle: str = "5") -> dict[str, str]:  # fmt: skip
    """A task file as plan writes it without PyYAML (JSON, which is YAML too)."""
    body = {
        "name": name,
        "resources": {"accelerators": "L4:1"},
        "num_nodes": 1,
        "envs": {"GPUSCOUT_CLOUD_EXPORT": export, "GPUSCOUT_CLOUD_IDLE_MINUTES": idle},
    }
    return {"t.yaml": json.dumps(body)}  # fmt: skip


def _linked_result(tmp: Path) -> None:
    """results/a.json a link to a file outside the plan's folder."""
    (tmp / "results").mkdir()
    (tmp / "outside.json").write_text('{"format": "gpuscout-runs"}')
    os.symlink(tmp / "outside.json", tmp / "results" / "a.json")


def _folder_result(tmp: Path) -> None:
    (tmp / "results" / "b.json").mkdir(parents=True)


CASES = [
    # run: the task file's names and minutes
    Case(DRY, 2, "its task name '-e' is not a plain name", files=_task(name="-e")),
    Case(DRY, 2, "its task name '-essh -c id' is not a plain name",
         files=_task(name="-essh -c id")),
    Case(DRY, 2, "'../../../../x.json' is not a plain name",
         files=_task(export="../../../../x.json")),
    Case(DRY, 2, "'-e.json' is not a plain name", files=_task(export="-e.json")),
    Case(DRY, 2, "ending in '.json'", files=_task(export="runs.sqlite")),
    Case(DRY, 2, "GPUSCOUT_CLOUD_IDLE_MINUTES -1: autodown after that many idle minutes",
         files=_task(idle="-1")),
    Case(DRY, 2, "GPUSCOUT_CLOUD_IDLE_MINUTES 100000", files=_task(idle="100000")),
    # collect: regular files only
    Case(("cloud", "collect", "{tmp}"), 2, "a.json' is not a regular file",
         setup=_linked_result),
    Case(("cloud", "collect", "{tmp}"), 2, "b.json' is not a regular file",
         setup=_folder_result),
    # plan: options in full, none of the plan's own
    Case((*BENCH, "--task-i", "1"), 2, "bench --task-i: an abbreviation of --task-index"),
    Case((*BENCH, "--clus", "slurm"), 2, "bench --clus: an abbreviation of --cluster"),
    Case((*BENCH, "--work=a:1,b:2"), 2, "bench --work: an abbreviation of"),
    Case((*BENCH, "--d", "x.sqlite"), 2, "bench --d: an abbreviation of"),
    Case((*BENCH, "--scaling", "1,2,4"), 2,
         "bench --scaling 1,2,4: 2,4 GPU(s), more than the 1 of --gpus-per-node 1"),
    # estimator: no machine plan would refuse
    Case(("cloud", "estimator", "--workload", "resnet50", "--epochs", "1", "--count", "16"),
         0, "one h100-sxm machine holds at most 8"),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
