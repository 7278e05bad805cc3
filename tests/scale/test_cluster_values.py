"""Issue 43, cluster values: every number a cluster manager or the command line hands gpuscout
is read once, strictly (ASCII digits, bounded before anything is built from it), every host it
prints is escaped, and the port check reads a port the way the real server will bind it.

The environments are the real input of :func:`gpuscout.scale.cluster.resolve` (the variables
each manager documents, with the values the issue found); the port tests use real sockets on
loopback, the CLI tests a real ``gpuscout bench`` process.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import tracemalloc

import psutil
import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.ranges import NotWhole, int_in, whole
from gpuscout.core.text import is_printable
from gpuscout.measure.lifeline import PARENT_ENV
from gpuscout.measure.nvml import nvml_indices
from gpuscout.scale.cluster import (
    MAX_CLUSTER_WORKERS,
    count_nodelist,
    expand_nodelist,
    resolve,
)
from gpuscout.scale.distribute import check_port_free, parse_address, parse_devices

SLURM = {
    "SLURM_JOB_NODELIST": "host[01-02]",
    "SLURM_NTASKS": "4",
    "SLURM_TASKS_PER_NODE": "2(x2)",
    "SLURM_PROCID": "3",
}
SKY = {"SKYPILOT_NODE_IPS": "10.0.0.5\n10.0.0.6", "SKYPILOT_NODE_RANK": "1"}
MAIN = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


# The one parser.


@pytest.mark.parametrize(
    "text",
    ["²", "¹", "³", "٣", "1_000", "+5", "0x10", "1e3", "", " ", "5 5", "inf", "Ⅻ", "\uff11"],
)
def test_only_ascii_digits_are_a_whole_number(text: str) -> None:
    """``str.isdigit()`` is true for '²' and a fullwidth 1; ``int()`` takes that 1, '٣',
    '1_000' and '+5'."""
    with pytest.raises(NotWhole) as info:
        whole(text, 0, 10**6)
    assert not info.value.out_of_range
    with pytest.raises(argparse.ArgumentTypeError, match="is not a whole number"):
        int_in(0, 10**6)(text)


def test_bounds_are_checked_on_the_digits_before_int_runs() -> None:
    # int() of more than 4,300 digits raises ValueError (a traceback where it is not caught)
    for text in ("1" * 5_000, "9" * 10, "-3", "10001"):
        with pytest.raises(NotWhole) as info:
            whole(text, 0, 10_000)
        assert info.value.out_of_range
    assert [whole(t, 0, 10_000) for t in (" 7 ", "007", "0", "10000", "0" * 50 + "12")] == [
        7, 7, 0, 10_000, 12,
    ]  # fmt: skip


# Cluster managers' variables.


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({**SLURM, "SLURM_PROCID": "²"}, "SLURM_PROCID='²' is not a whole number"),
        ({**SLURM, "SLURM_NTASKS": "٤"}, "SLURM_NTASKS='٤' is not a whole number"),
        ({**SLURM, "SLURM_NODEID": "¹"}, "SLURM_NODEID='¹' is not a whole number"),
        ({**SLURM, "SLURM_TASKS_PER_NODE": "²(x2)"}, "SLURM_TASKS_PER_NODE='²(x2)' is not"),
        ({**SLURM, "SLURM_TASKS_PER_NODE": "2(x²)"}, "SLURM_TASKS_PER_NODE='2(x²)' is not"),
        ({**SLURM, "SLURM_PROCID": "1" * 5_000}, "SLURM_PROCID='111"),
    ],
)
def test_slurm_values_that_are_not_ascii_numbers_are_one_line(
    env: dict[str, str], says: str
) -> None:
    with pytest.raises(UserError, match=says.replace("(", r"\(").replace(")", r"\)")):
        resolve("slurm", env)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({**SKY, "SKYPILOT_NODE_RANK": "¹"}, "SKYPILOT_NODE_RANK='¹' is not a whole number"),
        ({**SKY, "SKYPILOT_NUM_GPUS_PER_NODE": "³"}, "SKYPILOT_NUM_GPUS_PER_NODE='³' is not"),
        ({**SKY, "SKYPILOT_NUM_NODES": "٢"}, "SKYPILOT_NUM_NODES='٢' is not a whole number"),
    ],
)
def test_skypilot_values_that_are_not_ascii_numbers_are_one_line(
    env: dict[str, str], says: str
) -> None:
    with pytest.raises(UserError, match=says):
        resolve("skypilot", env)


def test_a_huge_node_list_is_refused_from_its_text_before_it_is_expanded() -> None:
    """The issue's 3.5 KB list of 250 ranges of 99,999 hosts (2.3 GB once expanded): refused
    from the count of its ranges; the expander is never called."""
    text = ",".join(f"n{i}x[1-99999]" for i in range(250))
    assert len(text) < 4_000 and count_nodelist(text) == 250 * 99_999
    expanded: list[str] = []

    def expand(nodes: str) -> list[str]:  # what the default would be asked, never done
        expanded.append(nodes)
        return []

    env = {**SLURM, "SLURM_JOB_NODELIST": text, "SLURM_NTASKS": "2", "SLURM_PROCID": "0"}
    with pytest.raises(
        UserError, match=f"names 24,999,750 nodes, over the {MAX_CLUSTER_WORKERS:,}"
    ):
        resolve("slurm", env, expand=expand)
    assert expanded == []
    # one index past the counter's bound once turned the cap off (None: the expander was
    # asked, and python-hostlist expands each range up to 100,000 names); it counts as too many
    huge = text + ",z[9999999999999999999]"
    assert count_nodelist(huge) is not None and count_nodelist(huge) > MAX_CLUSTER_WORKERS
    with pytest.raises(UserError, match="names more than 10\\^18 nodes"):
        resolve("slurm", {**env, "SLURM_JOB_NODELIST": huge}, expand=expand)
    assert expanded == []


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("host[01-04,07],gpu-a[1-2]", 7),
        ("a[1-2]b[3-5],c", 7),
        ("localhost", 1),
        ("n[5-1]", None),
        ("n[1-", None),
        ("n]1[", None),
        ("n[²-3]", None),
    ],
)
def test_a_node_list_is_counted_as_slurm_expands_it(text: str, count: int | None) -> None:
    assert count_nodelist(text) == count
    if count is not None:
        assert len(expand_nodelist(text)) == count


def test_a_repeat_in_tasks_per_node_builds_no_more_than_the_node_list() -> None:
    """``2(x5000000)`` is a 5-million-item list in python-hostlist's own parser: read here,
    it stops at one past the node list, and the mismatch is named."""
    env = {**SLURM, "SLURM_TASKS_PER_NODE": "2(x5000000)"}
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match=r"names 3 nodes but SLURM_JOB_NODELIST"):
            resolve("slurm", env)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000, peak


@pytest.mark.parametrize(
    "host", ["a\x1b[2Jb", "a\rb", "a\u202eb", "a b", "a\nb"], ids=["esc", "cr", "rlo", "sp", "lf"]
)
def test_a_host_with_controls_or_blanks_is_refused_and_shown_escaped(host: str) -> None:
    tf = '{"cluster": {"worker": ["%s:2222", "b:2222"]}, "task": {"type": "worker", "index": 0}}'
    cases = [
        ("tf-config", {"TF_CONFIG": tf % host.encode("unicode_escape").decode()}),
        ("slurm", {**SLURM, "SLURM_JOB_NODELIST": f"{host},c", "SLURM_NTASKS": "2",
                   "SLURM_PROCID": "0", "SLURM_TASKS_PER_NODE": "1(x2)"}),
    ]  # fmt: skip
    if len(host.splitlines()) == 1:  # SkyPilot's list is one IP a line: a CR or LF makes two
        cases.append(("skypilot", {**SKY, "SKYPILOT_NODE_IPS": f"{host}\nb"}))
    for kind, env in cases:
        with pytest.raises(UserError) as info:
            resolve(kind, env)
        assert is_printable(info.value.one_line()), kind
    with pytest.raises(UserError, match="is not host:port"):
        parse_address(f"{host}:2222")


@pytest.mark.parametrize("text", ["127.0.0.1:²²²²", "127.0.0.1:0", "127.0.0.1:65536", "h: 80"])
def test_a_worker_port_is_ascii_digits_in_range(text: str) -> None:
    with pytest.raises(UserError, match="is not host:port"):
        parse_address(text)
    assert parse_address("[::1]:2222") == ("::1", 2222)


def test_a_device_count_is_ascii_digits() -> None:
    with pytest.raises(UserError, match="neither a count nor a list"):
        parse_devices("²")
    with pytest.raises(UserError, match="neither a count nor a list"):
        parse_devices("GPU:²")
    with pytest.raises(UserError, match="no device to train on"):
        parse_devices("0")
    assert parse_devices("2") == 2 and parse_devices("gpu:1") == ("GPU:1",)


def test_the_bench_command_refuses_a_superscript_rank_in_one_line() -> None:
    """The issue's traceback, end to end: a real ``gpuscout bench`` with SLURM_PROCID=²."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SKYPILOT_"))}
    env.pop("TF_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "bench", "--workload", "mlp", "--cluster", "slurm"],
        env={**env, **SLURM, "SLURM_PROCID": "²", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "SLURM_PROCID='²' is not a whole number" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# The port check.


def _time_wait_on(port: int) -> bool:
    return any(
        c.laddr and c.laddr.port == port and c.status == psutil.CONN_TIME_WAIT
        for c in psutil.net_connections(kind="tcp4")
    )


def test_a_port_whose_last_connection_is_in_time_wait_is_free() -> None:
    """The previous run's server closed its end first, so that connection waits in TIME_WAIT
    on the server's port for a minute; a new server (gRPC binds with SO_REUSEADDR) starts
    there, so the check must let it."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server's side closes first: its end goes to TIME_WAIT
            client.recv(1)  # the server's FIN
    deadline = time.monotonic() + 60  # a bound for a loaded machine, not a speed check
    while not _time_wait_on(port):
        assert time.monotonic() < deadline, "no TIME_WAIT connection appeared"
        time.sleep(0.05)
    check_port_free(f"127.0.0.1:{port}")  # refused before: the bind had no SO_REUSEADDR


def test_a_port_something_listens_on_is_still_in_use() -> None:
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(UserError, match=f"port {port} of worker 127.0.0.1:{port} is already"):
            check_port_free(f"127.0.0.1:{port}")


# Other readers of outside numbers: the same parser.


def test_a_cuda_visible_devices_entry_that_is_not_ascii_digits_watches_every_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "²,0")
    assert nvml_indices("GPU:0") is None  # was int('²'): a ValueError in the monitor
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert nvml_indices("GPU:0,GPU:1") == [3, 1]


def test_a_launcher_pid_that_is_not_ascii_digits_is_ignored() -> None:
    """``GPUSCOUT_DIE_WITH_PID=²`` (read by every command first) ended in int()'s traceback."""
    env = {**os.environ, PARENT_ENV: "²"}
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "specs", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
