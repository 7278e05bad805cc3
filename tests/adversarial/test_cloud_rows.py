"""Rows for ``gpuscout cloud`` (issue 32): a plan with no bench or a bench the plan cannot
cap, options the plan sets itself, GPUs SkyPilot has no name for, missing files and folders,
and a run without SkyPilot. Each is one line, exit 2, without TensorFlow."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

PLAN = ("cloud", "plan", "--out", "{tmp}/out", "--gpus", "l4")
BENCH = (*PLAN, "--", "bench")

CASES = [
    # plan: the bench it runs
    Case(PLAN, 2, "cloud plan runs 'gpuscout bench' on each GPU: give it after --"),
    Case((*PLAN, "--", "scout"), 2, "give it after -- (got 'scout')"),
    Case((*BENCH, "--db", "x.sqlite"), 2, "bench --db: the plan sets it on each node"),
    Case((*BENCH, "--workers=a:1,b:2"), 2, "bench --workers: the plan sets it"),
    Case((*BENCH, "--task-index", "1"), 2, "bench --task-index: the plan sets it"),
    Case((*BENCH, "--steps", "100"), 2, "bench --steps 100 alone has no time budget"),
    Case((*BENCH, "--seconds", "-5"), 2, "argument --seconds: must be above 0"),
    Case((*BENCH, "--workload", "nosuch"), 2, "unknown workload 'nosuch'"),
    Case((*BENCH, "--model", "{tmp}/missing.py:build"), 2,
         "missing.py:build: no file"),
    Case((*BENCH, "--data", "{tmp}/missing.py:make"), 2, "bench --data"),
    # plan: the GPUs, their machines and the money
    Case(("cloud", "plan", "--gpus", "nosuch", "--", "bench"), 2, "unknown GPU 'nosuch'"),
    Case(("cloud", "plan", "--gpus", ",", "--", "bench"), 2, "--gpus ',' names nothing"),
    Case(("cloud", "plan", "--gpus", "a100-40gb-pcie", "--", "bench"), 2,
         "SkyPilot has no accelerator name gpuscout knows for a100-40gb-pcie"),
    Case((*PLAN, "--gpus-per-node", "16", "--", "bench"), 2, "one l4 machine holds at most 8"),
    Case((*PLAN, "--nodes", "2", "--", "bench", "--devices", "2"), 2,
         "--nodes 2 and bench --devices contradict each other"),
    Case((*PLAN, "--gpus-per-node", "0", "--", "bench"), 2, "argument --gpus-per-node"),
    Case((*PLAN, "--nodes", "0", "--", "bench"), 2, "argument --nodes: must be a whole number"),
    Case((*PLAN, "--max-usd", "nan", "--", "bench"), 2, "argument --max-usd"),
    Case((*PLAN, "--max-usd", "-1", "--", "bench"), 2, "argument --max-usd"),
    Case((*PLAN, "--max-usd", "0.01", "--", "bench"), 2,
         "gpuscout-l4-1x1 could cost up to $"),
    Case(("cloud", "plan", "--out", "{tmp}/f", "--gpus", "l4", "--", "bench"), 2,
         "cannot write --out", files={"f": "a file, not a folder"}),
    # run and collect: the folder
    Case(("cloud", "run", "{tmp}/none"), 2, "is not a folder"),
    Case(("cloud", "run", "{tmp}"), 2, "holds no task files (*.yaml)"),
    Case(("cloud", "run", "{tmp}", "--dry-run"), 2, "not a task file 'cloud plan' wrote",
         files={"t.yaml": "name: [unclosed\n"}),
    Case(("cloud", "run", "{tmp}", "--dry-run"), 2, "not a task file 'cloud plan' wrote",
         files={"t.yaml": "name: x\n"}),
    Case(("cloud", "collect", "{tmp}/none"), 2, "is not a folder"),
    Case(("cloud", "collect", "{tmp}"), 2, "holds no exported run files"),
    Case(("cloud", "collect", "{tmp}"), 2, "a.json", files={"a.json": '{"format": "x"}'}),
    # estimator: the job
    Case(("cloud", "estimator"), 2, "say what the job trains"),
    Case(("cloud", "estimator", "--workload", "resnet50"), 2, "the job needs its size"),
    Case(("cloud", "estimator", "--workload", "resnet50", "--epochs", "1", "--count", "0"), 2,
         "argument --count"),
    Case(("cloud", "estimator", "--workload", "resnet50", "--epochs", "1", "--nodes", "99"), 2,
         "argument --nodes"),
    Case(("cloud", "estimator", "--model", "{tmp}/missing.py:build", "--samples", "10"), 2,
         "does not exist"),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
