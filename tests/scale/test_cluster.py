"""``--cluster``: the workers and this process's rank, read from what a cluster manager sets.

The environment mappings below are the real input of :func:`gpuscout.scale.cluster.resolve`
(the variables Slurm, SkyPilot and TF_CONFIG writers document), not a stand-in for it. No real
Slurm or Kubernetes cluster is used; the one end-to-end test runs two real ``gpuscout bench``
processes on loopback with the variables ``srun`` would give two tasks on one node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.limits import MAX_WORKERS, WORKER_BYTES
from gpuscout.scale.cluster import (
    MAX_CLUSTER_WORKERS,
    Cluster,
    check_size,
    expand_nodelist,
    resolve,
)

SLURM = {
    "SLURM_JOB_NODELIST": "host[01-02]",
    "SLURM_NTASKS": "4",
    "SLURM_TASKS_PER_NODE": "2(x2)",
    "SLURM_PROCID": "3",
    "SLURM_NODEID": "1",
    "SLURM_LOCALID": "1",
}
SKY = {
    "SKYPILOT_NODE_IPS": "10.0.0.5\n10.0.0.6\n10.0.0.7\n",
    "SKYPILOT_NODE_RANK": "2",
    "SKYPILOT_NUM_NODES": "3",
    "SKYPILOT_NUM_GPUS_PER_NODE": "8",
}


def tf_config(cluster: dict[str, list[str]], kind: str, index: int) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})}


def test_slurm_tasks_per_node_get_a_port_each_on_their_node() -> None:
    c = resolve("slurm", SLURM)
    assert c.workers == ("host01:23456", "host01:23457", "host02:23456", "host02:23457")
    assert (c.rank, c.chief, c.address, c.local, c.source) == (
        3, "host01:23456", "host02:23457", 2, "slurm"
    )  # fmt: skip
    assert c.line.startswith("slurm: 4 tasks on host[01-02] (SLURM_TASKS_PER_NODE=2(x2))")
    assert "this is task 3 on host02" in c.line
    assert resolve("slurm", SLURM, port_base=30000).workers[1] == "host01:30001"


@pytest.mark.parametrize(
    ("extra", "hosts"),
    [
        # one task per node: no tasks-per-node variable needed
        ({"SLURM_JOB_NODELIST": "gpu-a[1-2],b7", "SLURM_NTASKS": "3", "SLURM_PROCID": "2",
          "SLURM_TASKS_PER_NODE": ""}, ["gpu-a1", "gpu-a2", "b7"]),
        # uneven: 2 tasks on each of the first two nodes, 1 on the third
        ({"SLURM_JOB_NODELIST": "n[7-9]", "SLURM_NTASKS": "5", "SLURM_PROCID": "4",
          "SLURM_TASKS_PER_NODE": "2(x2),1"}, ["n7", "n7", "n8", "n8", "n9"]),
        # srun --ntasks-per-node sets SLURM_NTASKS_PER_NODE only
        ({"SLURM_JOB_NODELIST": "localhost", "SLURM_NTASKS": "2", "SLURM_PROCID": "1",
          "SLURM_TASKS_PER_NODE": "", "SLURM_NTASKS_PER_NODE": "2"}, ["localhost"] * 2),
        # a step on part of the job: the step's variables win over the job's
        ({"SLURM_STEP_NODELIST": "host[03-04,07]", "SLURM_STEP_NUM_TASKS": "3",
          "SLURM_STEP_TASKS_PER_NODE": "1(x3)", "SLURM_PROCID": "0"},
         ["host03", "host04", "host07"]),
    ],
)  # fmt: skip
def test_slurm_node_lists_and_task_counts_the_slurm_way(
    extra: dict[str, str], hosts: list[str]
) -> None:
    env = {**SLURM, "SLURM_NODEID": "", "SLURM_LOCALID": "", **extra}
    c = resolve("slurm", env)
    assert [w.rpartition(":")[0] for w in c.workers] == hosts
    assert len(set(c.workers)) == len(hosts)  # distinct ports where hosts repeat


def test_a_node_list_python_hostlist_cannot_parse_is_refused_without_scontrol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no scontrol to ask
    assert expand_nodelist("h[01-03,5]") == ["h01", "h02", "h03", "h5"]
    with pytest.raises(ValueError, match="unbalanced"):
        expand_nodelist("h[01-03")


def test_skypilot_one_worker_per_node_and_two_nodes_on_one_ip() -> None:
    c = resolve("skypilot", SKY, port_base=40000)
    assert c.workers == ("10.0.0.5:40000", "10.0.0.6:40000", "10.0.0.7:40000")
    assert (c.rank, c.local) == (2, 1)
    assert "3 nodes, each using its 8 GPUs, this is node 2" in c.line
    loop = resolve("skypilot", {"SKYPILOT_NODE_IPS": "127.0.0.1\n127.0.0.1",
                                "SKYPILOT_NODE_RANK": "0"})  # fmt: skip
    assert loop.workers == ("127.0.0.1:23456", "127.0.0.1:23457") and loop.local == 2


def test_tf_config_puts_the_chief_first() -> None:
    c = resolve("tf-config", tf_config({"worker": ["w0:2222", "w1:2222"], "chief": ["c:2222"]},
                                       "worker", 1))  # fmt: skip
    assert (c.workers, c.rank) == (("c:2222", "w0:2222", "w1:2222"), 2)
    assert "this is worker 1 (task 2)" in c.line
    chief = resolve("tf-config", tf_config({"chief": ["c:1"], "worker": ["w:1"]}, "chief", 0))
    assert chief.rank == 0 and chief.address == "c:1"


def test_auto_takes_the_first_source_set_and_says_which() -> None:
    both = {**SLURM, **tf_config({"worker": ["a:1", "b:1"]}, "worker", 0)}
    c = resolve("auto", both)
    assert c.source == "tf-config" and c.line.startswith("auto: TF_CONFIG is set")
    assert resolve("auto", {**SLURM, **SKY}).source == "slurm"
    assert resolve("auto", SKY).source == "skypilot"
    none = resolve("auto", {"SLURM_JOB_ID": "7"})  # a batch script, not a task of a step
    assert (none.workers, none.rank, none.source) == ((), None, "none")
    assert "no cluster found" in none.line


def test_manual_is_the_workers_given() -> None:
    c = resolve("manual", {**SLURM}, workers=["a:1", "b:1"], task_index=1)
    assert (c.workers, c.rank, c.source) == (("a:1", "b:1"), 1, "manual")
    assert resolve("manual", {}).workers == ()


BAD = [
    ("slurm", {**SLURM, "SLURM_PROCID": "7"}, None, "SLURM_PROCID=7 with SLURM_NTASKS=4"),
    ("slurm", {**SLURM, "SLURM_PROCID": ""}, None, "SLURM_PROCID is not set"),
    ("slurm", {**SLURM, "SLURM_NTASKS": "x"}, None, "SLURM_NTASKS='x' is not a whole number"),
    ("slurm", {**SLURM, "SLURM_JOB_NODELIST": "host[02-01]"}, None,
     "SLURM_JOB_NODELIST='host[02-01]' is not a Slurm node list (start > stop)"),
    ("slurm", {**SLURM, "SLURM_TASKS_PER_NODE": "2x2"}, None,
     "SLURM_TASKS_PER_NODE='2x2' is not a Slurm task count list"),
    ("slurm", {**SLURM, "SLURM_TASKS_PER_NODE": "2(x3)"}, None,
     "SLURM_TASKS_PER_NODE=2(x3) names 3 nodes but SLURM_JOB_NODELIST=host[01-02] has 2"),
    ("slurm", {**SLURM, "SLURM_TASKS_PER_NODE": "1,2", "SLURM_PROCID": "0"}, None,
     "SLURM_TASKS_PER_NODE=1,2 makes 3 tasks but SLURM_NTASKS=4"),
    ("slurm", {**SLURM, "SLURM_LOCALID": "0"}, None, "SLURM_LOCALID=0 but task 3 is task 1"),
    ("slurm", {**SLURM, "SLURM_NTASKS": "20000"}, None, "SLURM_NTASKS=20000: over the 10,000"),
    ("slurm", SLURM, 65535, "--port-base 65535 with 2 workers on host01"),
    ("skypilot", {**SKY, "SKYPILOT_NODE_RANK": "3"}, None,
     "SKYPILOT_NODE_RANK=3 with 3 nodes"),
    ("skypilot", {**SKY, "SKYPILOT_NUM_NODES": "4"}, None,
     "SKYPILOT_NUM_NODES=4 but SKYPILOT_NODE_IPS has 3 lines"),
    ("skypilot", {"SKYPILOT_NODE_RANK": "0"}, None, "SKYPILOT_NODE_IPS is not set"),
    ("tf-config", {"TF_CONFIG": "{not json"}, None, "TF_CONFIG='{not json' is not JSON"),
    ("tf-config", tf_config({"worker": ["a:1"], "ps": ["p:1"]}, "worker", 0), None,
     "TF_CONFIG's cluster has 'ps' tasks"),
    ("tf-config", tf_config({"worker": ["a:1"]}, "worker", 1), None,
     'task {"type": "worker", "index": 1} is not one of'),
    ("tf-config", tf_config({"worker": ["a"]}, "worker", 0), None, "lists of host:port"),
    ("tf-config", tf_config({"worker": ["a:1", "a:1"]}, "worker", 0), None, "address twice"),
    ("tf-config", {"TF_CONFIG": "{}", "SLURM_PROCID": "0"}, None, "no 'cluster' and 'task'"),
    ("tf-config", tf_config({"worker": ["a:1"]}, "worker", 0), 30000,
     "--port-base 30000 with --cluster tf-config"),
    ("auto", {}, 30000, "--port-base 30000 but --cluster auto found no cluster"),
    ("slurm", SLURM, 80, "--port-base 80 is not a port"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "env", "base", "says"), BAD, ids=[b[3][:40] for b in BAD])
def test_a_malformed_environment_is_one_line_naming_the_variable(
    kind: str, env: dict[str, str], base: int | None, says: str
) -> None:
    with pytest.raises(UserError) as exc:
        resolve(kind, env, port_base=base)
    assert says in exc.value.one_line() and "\n" not in exc.value.one_line()


def test_the_cluster_options_contradict_the_manual_ones() -> None:
    with pytest.raises(UserError, match="--cluster slurm and --workers contradict"):
        resolve("slurm", SLURM, workers=["a:1"])
    with pytest.raises(UserError, match="--cluster auto and --task-index contradict"):
        resolve("auto", {}, task_index=0)


def test_the_worker_count_is_checked_before_anything_starts() -> None:
    assert MAX_CLUSTER_WORKERS == 10_000  # the --task-index range (cli/parser.py TASK_INDEX)
    many = Cluster(("h:1",) * (MAX_CLUSTER_WORKERS + 1), 0, "slurm", "")
    with pytest.raises(UserError, match="10,001 workers, over the 10,000"):
        check_size(many, 1e15, 1024)
    crowded = Cluster(("h:1", "h:2", "h:3"), 0, "slurm", "", local=3)
    with pytest.raises(UserError, match="slurm: 3 workers on this host: --workers 3 needs"):
        check_size(crowded, 2.5 * WORKER_BYTES, 64)
    with pytest.raises(UserError, match=f"at most {MAX_WORKERS}"):
        check_size(Cluster((), None, "slurm", "", local=MAX_WORKERS + 1), 1e15, 10**4)
    check_size(crowded, 3 * WORKER_BYTES, 1)  # exactly fits


# End to end, the layer runs under every `gpuscout launch` (each worker is started with
# TF_CONFIG and --cluster tf-config: tests/cli/test_scale_cli.py, tests/measure/
# test_jax_workers.py); a Slurm or SkyPilot environment differs only in what resolve() reads,
# which the tests above cover, so no second two-worker TensorFlow run is paid for here.


def test_a_node_list_reaches_scontrol_after_the_end_of_its_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: a node list python-hostlist cannot read is handed to Slurm's own scontrol, and
    it is a value from the environment: it must not be read as an option. scontrol does not
    exist here, so a stand-in script records what it is given (what a GNU getopt tool treats as
    an option: anything starting with '-' before a '--')."""
    fake = tmp_path / "scontrol"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" != "--" ]; then echo "option parsing not ended" >&2; exit 1; fi\n'
        f'printf "%s\\n" "$@" > {tmp_path / "argv.txt"}; echo n1; echo n2\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert expand_nodelist("-n[1-2") == ["n1", "n2"]
    assert (tmp_path / "argv.txt").read_text().split("\n")[:-1] == [
        "--",
        "show",
        "hostnames",
        "-n[1-2",
    ]
