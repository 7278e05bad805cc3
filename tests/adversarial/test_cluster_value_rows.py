"""Rows of issue 43: the values a cluster manager or the command line gives, read strictly.

``str.isdigit()`` is true for '²', ``int()`` is not: each such value used to end in a
``ValueError`` traceback. A node list of 250 ranges was expanded (2.3 GB) before the worker
cap was checked; a host with an escape sequence was printed raw. Each row's environment is
what the manager would have set (``Case.env``; "" unsets a variable this machine may have),
and every refusal is one line naming the variable and its value, escaped, exit 2, before
TensorFlow is imported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscout.core.text import is_printable
from tests.adversarial.table import Case, cases, run_case

BENCH = ("bench", "--workload", "mlp", "--steps", "5")
# Every variable a source reads, unset unless the row sets it (this machine may be a task).
UNSET = {
    name: ""
    for name in (
        "TF_CONFIG", "SLURM_PROCID", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
        "SLURM_NODELIST", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS",
        "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE",
        "SLURM_NODEID", "SLURM_LOCALID", "SKYPILOT_NODE_IPS", "SKYPILOT_NODE_RANK",
        "SKYPILOT_NUM_NODES", "SKYPILOT_NUM_GPUS_PER_NODE",
    )
}  # fmt: skip
SLURM = {
    **UNSET,
    "SLURM_JOB_NODELIST": "host[01-02]",
    "SLURM_NTASKS": "4",
    "SLURM_TASKS_PER_NODE": "2(x2)",
    "SLURM_PROCID": "3",
}
SKY = {**UNSET, "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2", "SKYPILOT_NODE_RANK": "0"}
HUGE = ",".join(f"n{i}x[1-99999]" for i in range(250))  # 3.5 KB, 24,999,750 hosts
ESC_HOST = "a\x1b[2Jb"  # an escape sequence that clears the screen
ESC_NODE = "a\x1bcb"  # ESC c resets the terminal; no bracket, so a Slurm node list expands it


def _tf_config(host: str) -> str:
    workers = [f"{host}:2222", "b:2222"]
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": 0}})


def _slurm(**values: str) -> dict[str, str]:
    return {**SLURM, **values}


CASES = [
    Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_PROCID='²' is not a whole number",
         env=_slurm(SLURM_PROCID="²")),
    Case((*BENCH, "--cluster", "auto"), 2, "SLURM_NTASKS='٤' is not a whole number",
         env=_slurm(SLURM_NTASKS="٤")),
    Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_PROCID='11111",
         env=_slurm(SLURM_PROCID="1" * 5_000)),
    Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_NODEID='¹' is not a whole number",
         env=_slurm(SLURM_NODEID="¹")),
    Case((*BENCH, "--cluster", "skypilot"), 2, "SKYPILOT_NODE_RANK='¹' is not a whole number",
         env={**SKY, "SKYPILOT_NODE_RANK": "¹"}),
    Case((*BENCH, "--cluster", "skypilot"), 2,
         "SKYPILOT_NUM_GPUS_PER_NODE='³' is not a whole number",
         env={**SKY, "SKYPILOT_NUM_GPUS_PER_NODE": "³"}),
    Case((*BENCH, "--cluster", "skypilot"), 2, "SKYPILOT_NUM_NODES='\uff12' is not a whole",
         env={**SKY, "SKYPILOT_NUM_NODES": "\uff12"}),  # a fullwidth 2
    # refused from its text: no host of it is built
    Case((*BENCH, "--cluster", "slurm"), 2,
         "SLURM_JOB_NODELIST names 24,999,750 nodes, over the 10,000 workers",
         env=_slurm(SLURM_JOB_NODELIST=HUGE, SLURM_NTASKS="2", SLURM_PROCID="0")),
    # a billion-node repeat: read up to one past the node list's two nodes
    Case((*BENCH, "--cluster", "slurm"), 2, "SLURM_TASKS_PER_NODE=2(x999999999) names 3 nodes",
         env=_slurm(SLURM_TASKS_PER_NODE="2(x999999999)")),
    # hosts with an escape sequence: refused, and shown escaped
    Case((*BENCH, "--cluster", "tf-config"), 2, "'worker' must be lists of host:port",
         env={**UNSET, "TF_CONFIG": _tf_config(ESC_HOST)}),
    Case((*BENCH, "--cluster", "skypilot"), 2, "SKYPILOT_NODE_IPS='a\\x1b[2Jb",
         env={**SKY, "SKYPILOT_NODE_IPS": f"{ESC_HOST}\n10.0.0.2"}),
    Case((*BENCH, "--cluster", "slurm"), 2, "names the host 'a\\x1bcb', which is no host name",
         env=_slurm(SLURM_JOB_NODELIST=f"{ESC_NODE},c", SLURM_NTASKS="2", SLURM_PROCID="0",
                    SLURM_TASKS_PER_NODE="1(x2)")),
    Case((*BENCH, "--workers", f"{ESC_HOST}:1,b:1", "--task-index", "0"), 2,
         "--workers entry 'a\\x1b[2Jb:1' is not host:port", env=UNSET),
    # the command line's numbers: the same parser
    Case((*BENCH, "--workers", "127.0.0.1:²²²²,b:1", "--task-index", "0"), 2,
         "--workers entry '127.0.0.1:²²²²' is not host:port", env=UNSET),
    Case((*BENCH, "--workers", "a:1,b:1", "--task-index", "¹"), 2,
         "argument --task-index: '¹' is not a whole number", env=UNSET),
    Case((*BENCH, "--cluster", "skypilot", "--port-base", "٢٣٤٥٦"), 2,
         "argument --port-base: '٢٣٤٥٦' is not a whole number", env=SKY),
    Case((*BENCH, "--devices", "²"), 2, "--devices '²' is neither a count nor a list", env=UNSET),
    Case((*BENCH, "--steps", "1_000"), 2, "argument --steps: '1_000' is not a whole number"),
    Case(("launch", "--workers", "²", "--", "bench"), 2,
         "argument --workers: '²' is not a whole number"),
    Case(("predict", "--workload", "mlp", "--count", "2x٣"), 2,
         "'2x٣' is not a GPU count (8) or machines x GPUs (2x8)"),  # int() took it as 3
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_case(case, tmp_path, monkeypatch)
    assert is_printable(outcome.err.rstrip("\n")), outcome.err  # nothing a terminal would run
