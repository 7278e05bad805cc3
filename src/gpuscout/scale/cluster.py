"""Who the workers are, read from the cluster manager that started this process.

A multi-worker run needs, on every process, the same ordered list of worker addresses and this
process's place in it (``--workers`` and ``--task-index``). Typing that on every machine is what
cluster managers exist to avoid: Slurm, SkyPilot, Kubernetes (``TF_CONFIG``) and Ray Train
already tell each process who its peers are. :func:`resolve` reads those variables and gives
the very ``workers`` + ``task_index`` the manual options give, so everything after it (the
plan, ``TF_CONFIG`` for the measuring child, JAX's coordinator ``workers[0]``, the chief storing
the run) is the same code whichever way a run was started.

Pure Python over an environment mapping: no framework, no network, so every source is tested
from the variables each manager documents. Ports: worker *i* listens on ``port_base`` plus the
number of workers before it on the same host, so several workers on one host (Slurm tasks per
GPU, or two SkyPilot "nodes" on 127.0.0.1 in a test) get distinct ports, and one per host all
use ``port_base``. Anything malformed is one line naming the variable and its value.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpuscout.core.errors import UserError
from gpuscout.core.limits import check_workers
from gpuscout.core.ranges import NotWhole, whole
from gpuscout.core.text import is_printable
from gpuscout.scale.cluster_env import SRUN_FIX, first_set, need, whole_var
from gpuscout.scale.slurm_nodes import TOO_MANY, count_nodelist, expand_nodelist, tasks_per_node

KINDS = ("auto", "slurm", "skypilot", "tf-config", "manual")
# auto tries these in this order: TF_CONFIG is the most specific (Ray Train or a Kubernetes
# operator wrote it for this very process, possibly inside a Slurm or SkyPilot allocation).
AUTO_ORDER = ("tf-config", "slurm", "skypilot")
# The variable whose presence says a source applies (auto).
MARKERS = {"tf-config": "TF_CONFIG", "slurm": "SLURM_PROCID", "skypilot": "SKYPILOT_NODE_RANK"}
# TensorFlow's own examples use 2222; 23456 is free of well-known services and is what the
# scale-out docs used for --workers. Stated in --help and docs/scale-out.md.
DEFAULT_PORT_BASE = 23456
MIN_PORT = 1024  # below: privileged ports, which a training job should not need
MAX_PORT = 65535
# The --task-index range (cli/parser.py TASK_INDEX): ten thousand workers in one run.
MAX_CLUSTER_WORKERS = 10_000


@dataclass(frozen=True)
class Cluster:
    """The workers of a run (``host:port``, the chief first) and this process's rank.

    ``workers`` empty: no cluster was found (``auto``) or given (``manual`` without
    ``--workers``); the run is one process. ``line`` says what was read, for the user.
    """

    workers: tuple[str, ...]
    rank: int | None
    source: str
    line: str
    local: int = 1  # workers on this process's host, itself included

    @property
    def chief(self) -> str | None:
        return self.workers[0] if self.workers else None

    @property
    def address(self) -> str | None:
        return self.workers[self.rank] if self.workers and self.rank is not None else None


def resolve(
    kind: str,
    environ: Mapping[str, str],
    port_base: int | None = None,
    workers: list[str] | None = None,
    task_index: int | None = None,
    expand: Callable[[str], list[str]] | None = None,
) -> Cluster:
    """The cluster ``kind`` describes in ``environ``; UserError for anything malformed.

    ``workers``/``task_index``: the manual options (only ``manual`` takes them). ``port_base``
    None: :data:`DEFAULT_PORT_BASE` (refused where the ports come from elsewhere). ``expand``:
    how a Slurm node list becomes host names (default :func:`expand_nodelist`).
    """
    if kind not in KINDS:
        raise UserError(f"--cluster {kind!r} is not a source.", f"pass one of {', '.join(KINDS)}.")
    if kind != "manual" and (workers or task_index is not None):
        given = "--workers" if workers else "--task-index"
        raise UserError(
            f"--cluster {kind} and {given} contradict each other: the cluster manager's "
            "variables name the workers.",
            f"drop {given}, or pass --cluster manual to use --workers and --task-index.",
        )
    source = kind
    why = ""
    if kind == "auto":
        found = [s for s in AUTO_ORDER if environ.get(MARKERS[s], "").strip()]
        if not found:
            unset = ", ".join(f"{MARKERS[s]}" for s in AUTO_ORDER)
            return _none(port_base, f"auto: no cluster found ({unset} unset); one process")
        source = found[0]
        why = f"auto: {MARKERS[source]} is set ({', '.join(MARKERS[s] for s in AUTO_ORDER)} "
        why += "tried in that order); "
    if source in ("manual", "tf-config") and port_base is not None:
        raise UserError(
            f"--port-base {port_base} with --cluster {source}: the ports are in "
            f"{'--workers' if source == 'manual' else 'TF_CONFIG'}.",
            "drop --port-base.",
        )
    if port_base is not None and not MIN_PORT <= port_base <= MAX_PORT:
        raise UserError(
            f"--port-base {port_base} is not a port gpuscout may listen on.",
            f"pass --port-base between {MIN_PORT} and {MAX_PORT}.",
        )
    base = DEFAULT_PORT_BASE if port_base is None else port_base
    if source == "manual":
        return _manual(workers or [], task_index)
    if source == "tf-config":
        cluster = _tf_config(environ)
    elif source == "slurm":
        cluster = _slurm(environ, base, expand or expand_nodelist)
    else:
        cluster = _skypilot(environ, base)
    return Cluster(cluster.workers, cluster.rank, source, why + cluster.line, cluster.local)


def check_size(cluster: Cluster, available_bytes: float, cores: int) -> None:
    """UserError when the run has more workers than gpuscout runs, or more on this host than
    it can take (the limits of ``gpuscout launch``: memory, cores), before anything starts."""
    if len(cluster.workers) > MAX_CLUSTER_WORKERS:
        raise UserError(
            f"{cluster.source}: {len(cluster.workers):,} workers, over the "
            f"{MAX_CLUSTER_WORKERS:,} one run may have.",
            "run fewer tasks or nodes.",
        )
    try:
        check_workers(cluster.local, available_bytes, cores)
    except UserError as exc:
        raise UserError(
            f"{cluster.source}: {cluster.local} workers on this host: {exc.problem}",
            "start fewer tasks per node, or a smaller job.",
        ) from None


def _none(port_base: int | None, line: str) -> Cluster:
    if port_base is not None:
        raise UserError(
            f"--port-base {port_base} but --cluster auto found no cluster (one process).",
            "drop --port-base, or run under srun, SkyPilot or with TF_CONFIG set.",
        )
    return Cluster((), None, "none", line)


def _manual(workers: list[str], task_index: int | None) -> Cluster:
    if not workers:
        return Cluster((), None, "manual", "manual: no --workers; one process")
    line = f"manual: {len(workers)} workers from --workers, this is task {task_index}"
    return Cluster(tuple(workers), task_index, "manual", line, _on_host(workers, task_index))


def _slurm(env: Mapping[str, str], base: int, expand: Callable[[str], list[str]]) -> Cluster:
    rank_text = need(env, "SLURM_PROCID")  # first: unset, this is no task of a job step
    name, text = first_set(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    nt_name, nt_text = first_set(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS")
    ntasks = whole_var(nt_name, nt_text, 1)
    rank = whole_var("SLURM_PROCID", rank_text, 0)
    # Every bound before anything is expanded: each node runs a task at least, so a node list
    # naming more nodes than one run may have workers is refused from its text alone.
    if ntasks > MAX_CLUSTER_WORKERS:
        raise UserError(f"{nt_name}={ntasks}: over the {MAX_CLUSTER_WORKERS:,} workers one run "
                        "may have.", "run fewer tasks.")  # fmt: skip
    named = count_nodelist(text)
    if named is not None and named > MAX_CLUSTER_WORKERS:
        many = "more than 10^18" if named >= TOO_MANY else f"{named:,}"
        raise UserError(
            f"{name} names {many} nodes, over the {MAX_CLUSTER_WORKERS:,} workers one run "
            "may have (counted from its ranges, before any is expanded).",
            "run on fewer nodes.",
        )
    try:
        nodes = expand(text)
    except ValueError as exc:
        raise UserError(
            f"{name}={text!r} is not a Slurm node list ({exc}).",
            "run under Slurm, or set it as Slurm writes it, e.g. host[01-04,07].",
        ) from None
    if not nodes:
        raise UserError(f"{name}={text!r} names no node.", SRUN_FIX + ".")
    if bad := next((n for n in nodes if not _host_ok(n)), None):
        raise UserError(f"{name}={text!r} names the host {bad!r}, which is no host name.",
                        "set it as Slurm writes it, e.g. host[01-04,07].")  # fmt: skip
    if rank >= ntasks:
        raise UserError(f"SLURM_PROCID={rank} with {nt_name}={ntasks}.", SRUN_FIX + " together.")
    per_node, tpn = tasks_per_node(env, len(nodes), ntasks)
    if len(per_node) != len(nodes):
        raise UserError(
            f"{tpn} names {len(per_node)} nodes but {name}={text} has {len(nodes)}.",
            SRUN_FIX + " together.",
        )
    if sum(per_node) != ntasks:
        raise UserError(f"{tpn} makes {sum(per_node)} tasks but {nt_name}={ntasks}.",
                        SRUN_FIX + " together.")  # fmt: skip
    # Slurm's default (block) layout: the first node's tasks, then the next node's.
    hosts = [node for node, count in zip(nodes, per_node, strict=True) for _ in range(count)]
    workers = _addresses(hosts, base)
    node = nodes.index(hosts[rank])
    local = int(workers[rank].rpartition(":")[2]) - base
    _check_place(env, rank, node, local, hosts[rank])
    line = (
        f"slurm: {ntasks} tasks on {text} ({tpn}), this is task {rank} on {hosts[rank]}, "
        f"listening on {workers[rank]}; the chief is {workers[0]}"
    )
    return Cluster(workers, rank, "slurm", line, per_node[node])


def _check_place(env: Mapping[str, str], rank: int, node: int, local: int, host: str) -> None:
    """Slurm's own SLURM_NODEID/SLURM_LOCALID must agree with the block layout assumed, or
    every task would compute another list (a cyclic --distribution, say)."""
    for var, expected in (("SLURM_NODEID", node), ("SLURM_LOCALID", local)):
        text = env.get(var, "").strip()
        if text and whole_var(var, text, 0) != expected:
            raise UserError(
                f"{var}={text} but task {rank} is task {local} of node {node} ({host}) in "
                "Slurm's block layout: the tasks were laid out another way.",
                "run srun with -m block (Slurm's default task distribution).",
            )


def _skypilot(env: Mapping[str, str], base: int) -> Cluster:
    text = need(env, "SKYPILOT_NODE_IPS")
    ips = [line.strip() for line in text.splitlines() if line.strip()]
    if any("," in ip or not _host_ok(ip) for ip in ips):
        raise UserError(
            f"SKYPILOT_NODE_IPS={text!r} is not one IP per line.",
            "set it as SkyPilot does: each node's IP on its own line.",
        )
    count = env.get("SKYPILOT_NUM_NODES", "").strip()
    if count and whole_var("SKYPILOT_NUM_NODES", count, 1) != len(ips):
        raise UserError(
            f"SKYPILOT_NUM_NODES={count} but SKYPILOT_NODE_IPS has {len(ips)} lines.",
            "run under SkyPilot (sky launch with num_nodes), which sets them together.",
        )
    rank = whole_var("SKYPILOT_NODE_RANK", need(env, "SKYPILOT_NODE_RANK"), 0)
    if rank >= len(ips):
        raise UserError(
            f"SKYPILOT_NODE_RANK={rank} with {len(ips)} nodes in SKYPILOT_NODE_IPS.",
            "run under SkyPilot, which sets them together.",
        )
    gpus = env.get("SKYPILOT_NUM_GPUS_PER_NODE", "").strip()
    each = (
        f", each using its {whole_var('SKYPILOT_NUM_GPUS_PER_NODE', gpus, 0)} GPUs" if gpus else ""
    )
    workers = _addresses(ips, base)
    line = (
        f"skypilot: {len(ips)} nodes{each}, this is node {rank}, listening on "
        f"{workers[rank]}; the chief is {workers[0]}"
    )
    return Cluster(workers, rank, "skypilot", line, _on_host(list(workers), rank))


def _tf_config(env: Mapping[str, str]) -> Cluster:
    text = need(env, "TF_CONFIG")
    shown = text if len(text) <= 200 else text[:200] + "..."
    fix = 'set it as JSON: {"cluster": {"worker": ["host:port", ...]}, "task": {"type": '
    fix += '"worker", "index": 0}}.'
    try:
        config = json.loads(text)
    except ValueError:
        raise UserError(f"TF_CONFIG={shown!r} is not JSON.", fix) from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise UserError(f"TF_CONFIG={shown!r} has no 'cluster' and 'task' objects.", fix)
    if other := sorted(set(cluster) - {"chief", "worker"}):
        raise UserError(
            f"TF_CONFIG's cluster has {other[0]!r} tasks: gpuscout runs "
            "MultiWorkerMirroredStrategy, whose tasks are a chief and workers only.",
            "give TF_CONFIG only 'chief' and 'worker' (no parameter servers, no evaluator).",
        )
    chief, rest = cluster.get("chief", []), cluster.get("worker", [])
    if not _addresses_ok(chief) or not _addresses_ok(rest) or len(chief) > 1:
        raise UserError(
            f"TF_CONFIG={shown!r}: 'chief' (at most one) and 'worker' must be lists of host:port.",
            fix,
        )
    workers = (*chief, *rest)
    if not workers:
        raise UserError(f"TF_CONFIG={shown!r} names no worker.", fix)
    if len(set(workers)) != len(workers):
        raise UserError(f"TF_CONFIG={shown!r} lists an address twice.",
                        "give each task its own host:port.")  # fmt: skip
    kind, index = task.get("type"), task.get("index", 0)
    roles = {"chief": len(chief), "worker": len(rest)}
    if kind not in roles or type(index) is not int or not 0 <= index < roles[kind]:
        raise UserError(
            f"TF_CONFIG's task {json.dumps(task)} is not one of its cluster's "
            f"{len(chief)} chief and {len(rest)} workers.",
            'set task to {"type": "worker", "index": i} with i below the worker count.',
        )
    rank = index if kind == "chief" else len(chief) + index
    line = (
        f"tf-config: {len(workers)} workers from TF_CONFIG, this is {kind} {index} "
        f"(task {rank}), listening on {workers[rank]}; the chief is {workers[0]}"
    )
    return Cluster(workers, rank, "tf-config", line, _on_host(list(workers), rank))


def _addresses_ok(items: object) -> bool:
    """A list of ``host:port``: a host of visible characters (no blank, no escape sequence)
    and a port of ASCII digits from 1 to 65535."""
    return isinstance(items, list) and all(_address_ok(a) for a in items)


def _address_ok(address: object) -> bool:
    if not isinstance(address, str):
        return False
    host, _, port = address.rpartition(":")
    if not _host_ok(host):
        return False
    try:
        whole(port, 1, MAX_PORT)
    except NotWhole:
        return False
    return port.strip() == port


def _host_ok(host: str) -> bool:
    """A host name or address as a manager writes one: visible characters, no blank (an escape
    sequence or a line break in one would be printed and handed to the runtime's resolver)."""
    return bool(host) and is_printable(host) and not any(c.isspace() for c in host)


def _addresses(hosts: list[str], base: int) -> tuple[str, ...]:
    """``host:port`` of each worker: ``base`` + the workers before it on the same host."""
    seen: Counter[str] = Counter()
    out = []
    for host in hosts:
        out.append(f"[{host}]" if ":" in host else host)
        out[-1] += f":{base + seen[host]}"
        seen[host] += 1
    if base + max(seen.values()) - 1 > MAX_PORT:
        host, most = seen.most_common(1)[0]
        raise UserError(
            f"--port-base {base} with {most} workers on {host}: their ports would pass {MAX_PORT}.",
            f"pass --port-base between {MIN_PORT} and {MAX_PORT - most + 1}.",
        )
    return tuple(out)


def _on_host(workers: list[str], rank: int | None) -> int:
    """Workers whose host is this worker's host."""
    if rank is None or not 0 <= rank < len(workers):
        return 1
    host = workers[rank].rpartition(":")[0]
    return sum(1 for w in workers if w.rpartition(":")[0] == host)
