"""Data-parallel settings, checked without TensorFlow: devices, workers, batches, ports.

gpuscout scales out with TensorFlow's own runtime: ``MirroredStrategy`` over the devices of one
machine (``--devices``) and ``MultiWorkerMirroredStrategy`` over workers (``--workers``), each
worker being one process configured through ``TF_CONFIG``; on JAX, over one machine's devices
with ``jax.sharding`` (a Mesh, the batch split along its first axis), and over workers with
``jax.distributed`` (one process each, the first the coordinator) under a Mesh of every
worker's devices. Everything that can be wrong in those settings is caught here, before a
child process or a framework starts.
"""

from __future__ import annotations

import errno
import json
import math
import socket
from dataclasses import dataclass

from gpuscout.core.comparison import ratio
from gpuscout.core.errors import UserError
from gpuscout.core.limits import MAX_DEVICES
from gpuscout.core.ranges import NotWhole, whole
from gpuscout.core.records import BenchConfig, Distribution, Interval
from gpuscout.core.text import is_printable, printable

MIRRORED = "MirroredStrategy"
MULTI_WORKER = "MultiWorkerMirroredStrategy"
JAX_SHARDING = "jax.sharding"
JAX_DISTRIBUTED = "jax.distributed"  # JAX over workers: a Mesh of every process's devices
TORCH_DDP = "DistributedDataParallel"  # PyTorch over workers: one process and device each
# XLA's flag that splits the host into N CPU devices; set by the measuring child before JAX starts.
HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
# The phase a worker reports while it waits for the others; the parent gives it
# worker_timeout_s (a worker that never connects would otherwise block it for ever).
CONNECTING = "waiting for every worker to connect"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


@dataclass(frozen=True)
class Plan:
    """What the data-parallel options ask for. ``strategy`` None: one device, no strategy."""

    strategy: str | None
    count: int | None = None  # --devices N
    names: tuple[str, ...] = ()  # --devices GPU:0,GPU:1
    workers: tuple[str, ...] = ()
    task_index: int = 0

    @property
    def is_chief(self) -> bool:
        return self.task_index == 0

    @property
    def local_replicas(self) -> int | None:
        """Replicas of a one-machine run (one per device); None where the workers decide."""
        return self.count or len(self.names) or None


def parse_devices(text: str) -> int | tuple[str, ...]:
    """``"2"`` -> 2; ``"GPU:0,GPU:1"`` -> the names, upper-cased; UserError otherwise."""
    text = text.strip()
    if text.isascii() and text.isdigit():
        try:
            return whole(text, 1, MAX_DEVICES)
        except NotWhole as exc:
            problem = "no device to train on" if text.strip("0") == "" else f"{exc}"
            raise UserError(
                f"--devices {text}: {problem}.", f"pass --devices 1 to {MAX_DEVICES:,}."
            ) from None
    names = tuple(n.strip().upper() for n in text.split(",") if n.strip())
    bad = [n for n in names if not _device_name(n)]
    if not names or bad:
        raise UserError(
            f"--devices '{text}' is neither a count nor a list of devices.",
            "pass a count (--devices 2) or names (--devices GPU:0,GPU:1).",
        )
    if len(set(names)) != len(names):
        raise UserError(f"--devices '{text}' names a device twice.", "name each device once.")
    if far := [n for n in names if device_index(n) >= MAX_DEVICES]:
        raise UserError(
            f"--devices '{text}': {far[0]} is beyond the {MAX_DEVICES:,} devices one machine "
            "may have (a CPU device that high would split the CPU into that many).",
            f"name devices numbered below {MAX_DEVICES:,}.",
        )
    if len({n.split(":")[0] for n in names}) > 1:
        raise UserError(
            f"--devices '{text}' mixes CPUs and GPUs: replicas would wait for the slowest.",
            "name devices of one kind.",
        )
    return names


def device_index(name: str) -> int:
    """1 of "GPU:1" (a name :func:`parse_devices` accepted)."""
    return int(name.partition(":")[2])


def _device_name(name: str) -> bool:
    kind, _, index = name.partition(":")
    try:
        whole(index, 0, 10**9)  # the MAX_DEVICES bound has its own message in parse_devices
    except NotWhole:
        return False
    return kind in ("CPU", "GPU") and index == index.strip()


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:port`` for IPv6) -> (host, port): the port by the one strict
    parser (ASCII digits, 1 to 65535), the host visible characters only (no blank, no escape
    sequence: it is printed and handed to the runtime's resolver)."""
    host, _, port = text.strip().rpartition(":")
    try:
        number = whole(port, 1, 65535) if port == port.strip() else 0
    except NotWhole:
        number = 0
    if not host or not number or not is_printable(host) or any(c.isspace() for c in host):
        raise UserError(
            f"--workers entry '{printable(text)}' is not host:port.",
            "list every worker as host:port, e.g. --workers 10.0.0.1:12345,10.0.0.2:12345.",
        )
    return host.strip("[]"), number


def plan(config: BenchConfig) -> Plan:
    """The data-parallel plan of ``config``; UserError for settings that do not go together."""
    if config.devices and config.workers:
        raise UserError(
            "--devices and --workers together: gpuscout runs one or the other.",
            "measure one machine's devices with --devices, or workers with --workers (each "
            "worker then uses every GPU it has, or its CPU).",
        )
    if config.task_index is not None and not config.workers:
        raise UserError("--task-index needs --workers.", "pass --workers host:port,host:port.")
    if not config.devices and not config.workers:
        if config.global_batch_size:
            raise UserError(
                "--global-batch-size needs --devices or --workers.", "use --batch-size."
            )
        return Plan(None)
    _check_combinations(config)
    if config.workers:
        for address in config.workers:
            parse_address(address)
        if len(set(config.workers)) != len(config.workers):
            raise UserError(
                f"--workers lists an address twice: {','.join(config.workers)}.",
                "give each worker its own host:port.",
            )
        if config.task_index is None or config.task_index >= len(config.workers):
            raise UserError(
                f"--task-index {config.task_index} with {len(config.workers)} workers.",
                f"pass --task-index 0..{len(config.workers) - 1}: this worker's place in "
                "--workers (0 is the chief, whose timing is the run's).",
            )
        strategy = {"jax": JAX_DISTRIBUTED, "torch": TORCH_DDP}.get(config.backend, MULTI_WORKER)
        return Plan(strategy, workers=tuple(config.workers), task_index=config.task_index)
    assert config.devices is not None
    if config.device:
        raise UserError("--device and --devices together.", "pass one of them.")
    spec = parse_devices(config.devices)
    strategy = JAX_SHARDING if config.backend == "jax" else MIRRORED
    if isinstance(spec, int):
        return Plan(strategy, count=spec)
    return Plan(strategy, names=spec)


def host_devices(config: BenchConfig) -> int | None:
    """The CPU devices a JAX run of ``config`` may need (``--devices 2`` takes CPUs where there
    is no GPU), for :data:`HOST_DEVICES_FLAG`; None: one is enough."""
    if config.backend != "jax" or not config.devices:
        return None
    spec = parse_devices(config.devices)
    if isinstance(spec, int):
        return spec if spec > 1 else None
    cpus = [device_index(n) for n in spec if n.startswith("CPU:")]
    return max(cpus) + 1 if cpus and max(cpus) > 0 else None


def with_host_devices(xla_flags: str, n: int) -> str:
    """``xla_flags`` (the user's ``XLA_FLAGS``) with the host split into ``n`` CPU devices,
    replacing any count already there. First: XLA stops reading the flags at a word that does
    not start with "--", and ignores all after it."""
    kept = [f for f in xla_flags.split() if not f.startswith(HOST_DEVICES_FLAG)]
    return " ".join([f"{HOST_DEVICES_FLAG}={n}", *kept])


def _check_combinations(config: BenchConfig) -> None:
    where = "--workers" if config.workers else "--devices"
    if config.loop == "fit" and config.backend == "torch":
        raise UserError(
            f"--loop fit with {where} on PyTorch: data-parallel PyTorch runs use gpuscout's "
            "own step with the model in DistributedDataParallel; Keras' model.fit has no DDP "
            "wrapper to call.",
            "drop --loop fit.",
        )
    if config.loop == "fit" and config.backend == "jax":
        raise UserError(
            f"--loop fit with {where} on JAX: data-parallel JAX runs use gpuscout's own step "
            "jitted over a jax.sharding Mesh; Keras' model.fit under keras.distribution is "
            "not wired in yet.",
            "drop --loop fit.",
        )
    if config.loop == "fit":
        raise UserError(
            f"--loop fit with {where}: data-parallel runs use gpuscout's custom loop "
            "(strategy.run over a distributed dataset); Keras 3 model.fit under "
            "MultiWorkerMirroredStrategy fails in TensorFlow 2.21.",
            "drop --loop fit.",
        )
    if config.xla and config.backend != "jax":  # every JAX step is compiled by XLA
        raise UserError(
            f"--xla with {where} is not supported yet: the gradient all-reduce would have to "
            "be compiled into the XLA cluster.",
            "drop --xla for data-parallel runs.",
        )
    if config.data:
        raise UserError(
            f"--data with {where} is not supported yet (its batches would have to be global "
            "batches, split over the replicas).",
            "drop --data: the run uses synthetic batches shaped for your model.",
        )
    if config.batch_size and config.global_batch_size:
        raise UserError(
            "--batch-size and --global-batch-size together.",
            "pass the batch per replica (--batch-size) or the global one, not both.",
        )


# JAX's own deadlines over --worker-timeout: its coordination client aborts the process (no
# exception to catch) when they pass, so the measuring child's parent, which kills a worker
# still connecting after --worker-timeout with a message that says why, must come first.
JAX_CONNECT_MARGIN_S = 10


def jax_timeouts(worker_timeout_s: float) -> dict[str, int]:
    """``jax.distributed.initialize``'s deadlines for ``--worker-timeout`` (whole seconds):
    connecting gets JAX_CONNECT_MARGIN_S more (the parent's clear message comes first); a
    peer's missed heartbeats, and the barrier at exit, get the timeout itself."""
    whole = max(1, math.ceil(worker_timeout_s))
    return {
        "initialization_timeout": whole + JAX_CONNECT_MARGIN_S,
        "heartbeat_timeout_seconds": whole,
        "shutdown_timeout_seconds": whole,
    }


def monitored(config: BenchConfig) -> str | None:
    """The devices the monitor should watch for ``config`` ("GPU:0,GPU:1"; None: the default)."""
    if not config.devices:
        return config.device
    spec = parse_devices(config.devices)
    return ",".join(f"GPU:{i}" for i in range(spec)) if isinstance(spec, int) else ",".join(spec)


def batches(config: BenchConfig, replicas: int, default_per_replica: int) -> tuple[int, int]:
    """(per-replica batch, global batch) for ``replicas`` replicas; UserError if uneven."""
    if config.global_batch_size:
        if config.global_batch_size % replicas:
            raise UserError(
                f"--global-batch-size {config.global_batch_size} does not split evenly over "
                f"{replicas} replicas.",
                f"pass a multiple of {replicas}, or --batch-size per replica.",
            )
        return config.global_batch_size // replicas, config.global_batch_size
    per = config.batch_size or default_per_replica
    return per, per * replicas


ONE_REPLICA_NOTE = (
    "one replica under the strategy: the same code as every count of a --scaling sweep, so "
    "efficiency isolates scaling; a plain run (no --devices) skips the strategy's own cost per "
    "step (measured: make bench-scale)"
)


def replica_notes(
    strategy: str, where: str, replicas: int, per: int, batch: int, split_cpu: str | None,
    one_replica: str = ONE_REPLICA_NOTE,
) -> list[str]:  # fmt: skip
    """What every data-parallel run assumes, in the same words on each backend: its batch per
    replica and global, what a one-replica run is for, and CPU devices that share the cores.
    ``split_cpu``: what the CPU was split into ("2 TensorFlow devices"); None: real devices."""
    notes = [
        f"data parallel: {strategy}, {replicas} replicas on {where}; batch {per} per replica, "
        f"{batch} global; samples/s count the global batch"
    ]
    if replicas == 1:
        notes.append(one_replica)
    if split_cpu:
        notes.append(
            f"logical devices: this machine's CPU split into {split_cpu} that share "
            "its cores, so this measures the distributed runtime's overhead, not the speed-up "
            "of more hardware"
        )
    return notes


def spread(
    strategy: str, devices: list[str], logical: bool, replicas: int, batch: int, workers: int = 1
) -> Distribution:
    """The run's record of how it was spread; ``batch`` is the global batch."""
    return Distribution(
        strategy=strategy,
        replicas=replicas,
        devices=devices,
        logical_devices=logical,
        workers=workers,
        per_replica_batch=batch // replicas,
        global_batch=batch,
    )


def tf_config(workers: tuple[str, ...], task_index: int) -> str:
    """The ``TF_CONFIG`` that makes this process worker ``task_index`` of the cluster."""
    return json.dumps(
        {"cluster": {"worker": list(workers)}, "task": {"type": "worker", "index": task_index}}
    )


def check_port_free(address: str) -> None:
    """UserError when this worker's own port, on this machine, is already taken.

    TensorFlow would otherwise fail deep inside its gRPC server start, or wait. Addresses of
    other machines are not checked: they are the other workers' business. The probe binds as
    the real server will (gRPC, TensorFlow's and JAX's coordinator, sets ``SO_REUSEADDR``): a
    connection of the previous run still in TIME_WAIT on this port does not stop the server,
    so it must not stop the check either (two cluster runs back to back on one machine); a
    socket listening there still does, ``SO_REUSEADDR`` or not.
    """
    host, port = parse_address(address)
    if host not in LOCAL_HOSTS and host != socket.gethostname():
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("" if host == "0.0.0.0" else host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return
            raise UserError(
                f"port {port} of worker {address} is already in use on this machine "
                "(another worker or program listens there).",
                "pick a free port for this worker in --workers, on every worker's command "
                "line (or use 'gpuscout launch', which picks free ports).",
            ) from None


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports free on ``host`` right now (held open together, so distinct)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def efficiency(base: Interval, base_n: int, run: Interval, n: int) -> Interval:
    """Scaling efficiency: throughput(n) / (n / base_n x throughput(base_n)), with a 95%
    interval from the two (independent) runs' intervals."""
    return ratio(run, base, base_n / n)


def parse_counts(text: str) -> list[int]:
    """``"1,2,4"`` -> [1, 2, 4] (sorted, distinct); UserError otherwise."""
    try:
        counts = sorted({whole(c, 1, MAX_DEVICES) for c in text.split(",") if c.strip()})
    except NotWhole:
        counts = []
    if not counts or counts[0] < 1:
        raise UserError(
            f"--scaling '{text}' is not a list of device counts.", "pass e.g. --scaling 1,2,4."
        )
    return counts
