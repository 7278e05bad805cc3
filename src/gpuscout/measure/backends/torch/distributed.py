"""PyTorch's side of runs over workers (``--workers``/``--cluster`` on ``--backend torch``):
``torch.distributed`` joined from the plan the cluster layer computed, the model wrapped in
``DistributedDataParallel``, and the few collectives the run itself needs.

The cluster layer (``scale/cluster.py``) gives every process the same ordered worker list and
its place in it; that is all ``init_process_group`` needs: the chief's address is the
rendezvous (``MASTER_ADDR:MASTER_PORT``, a ``TCPStore`` the chief listens on), the place is
the ``RANK``, the list's length the ``WORLD_SIZE``, and the workers before this one on its
host its ``LOCAL_RANK`` (which GPU it takes). gloo on CPUs, NCCL on CUDA GPUs, as
``torchrun`` scripts choose. Like the JAX and TensorFlow backends, every worker runs the same
number of steps (the chief decides, one extra all-reduce of a scalar after each step), then
times an all-reduce of the gradients' size, then sends the chief its own row
(``measure/worker_rows.py``) over an all-gather.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscout.core.records import WorkerRun
from gpuscout.measure import network, worker_rows
from gpuscout.measure.protocol import Outcome, Protocol
from gpuscout.scale import distribute
from gpuscout.scale.distribute import Plan

CPU_BACKEND = "gloo"  # torch.distributed's TCP collectives between CPU processes
GPU_BACKEND = "nccl"  # NVIDIA's collectives, what DDP uses between CUDA GPUs


@dataclass(frozen=True)
class Group:
    """This process's place in the run's process group."""

    workers: tuple[str, ...]
    rank: int
    local_rank: int  # the workers before this one on its host: the GPU it takes
    backend: str  # "gloo" | "nccl"
    device: str  # where the collectives' tensors live: "cpu" or "cuda:N"

    @property
    def world(self) -> int:
        return len(self.workers)

    @property
    def is_chief(self) -> bool:
        return self.rank == 0


def local_rank(workers: tuple[str, ...], rank: int) -> int:
    """Workers before ``rank`` whose host is its host (the ports tell them apart):
    ``LOCAL_RANK`` as torchrun numbers it, from the list alone, the same on every worker."""
    host = distribute.parse_address(workers[rank])[0]
    return sum(1 for w in workers[:rank] if distribute.parse_address(w)[0] == host)


def join(
    torch: Any, plan: Plan, device: str, worker_timeout_s: float, on_phase: Callable[[str], None]
) -> Group:
    """Make this process rank ``plan.task_index`` of ``len(plan.workers)``, rendezvousing at
    ``plan.workers[0]`` (the chief listens there; the others connect to it), with NCCL when
    ``device`` is a CUDA device, else gloo.

    Says :data:`~gpuscout.scale.distribute.CONNECTING` first: the measuring child's parent
    gives that phase ``--worker-timeout`` and then ends this process with a message that says
    why. The same timeout bounds the store's connect and every collective after it, so a
    worker that dies mid-run ends the others' collectives with an error, not a hang.
    """
    import torch.distributed as dist

    store_of: Any = dist.TCPStore  # type: ignore[attr-defined]  # not in torch's stubs' exports
    workers, rank = plan.workers, plan.task_index
    backend = GPU_BACKEND if device.startswith("cuda") else CPU_BACKEND
    host, port = distribute.parse_address(workers[0])
    timeout = datetime.timedelta(seconds=worker_timeout_s)
    on_phase(distribute.CONNECTING)
    store = store_of(
        host, port, len(workers), is_master=rank == 0, timeout=timeout, wait_for_workers=False
    )
    dist.init_process_group(
        backend, store=store, rank=rank, world_size=len(workers), timeout=timeout
    )
    if device.startswith("cuda"):
        torch.cuda.set_device(device)
    return Group(workers, rank, local_rank(workers, rank), backend, device)


def leave() -> None:
    """Tear the process group down (every worker, after the run; a no-op if none is up)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap(torch: Any, model: Any, group: Group) -> Any:
    """``model`` in ``DistributedDataParallel``: rank 0's parameters broadcast to every rank
    when it is built, and every gradient averaged over the ranks, bucket by bucket, while
    ``backward`` runs (the all-reduce overlaps the backward pass, as in any DDP script)."""
    ids = [torch.device(group.device).index] if group.device.startswith("cuda") else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)


def rows_of(tree: Any, group: Group, per: int, keras: Any) -> Any:
    """This rank's ``per`` rows of a global batch (tensors, or tuples of them) that every rank
    made alike from the same seed: rank r takes rows r x per to (r + 1) x per."""
    start = group.rank * per
    return keras.tree.map_structure(lambda a: a[start : start + per], tree)


def agreed_run(torch: Any, protocol: Protocol, step: Callable[[], Any], group: Group) -> Outcome:
    """Run ``step`` until the chief's protocol says stop, every rank the same number of steps
    (the last collective would otherwise wait for ever): after each timed step one all-reduce
    of a scalar, outside the timing, tells every rank whether the chief stops."""
    import torch.distributed as dist

    def agree(says: float) -> float:
        flag = torch.tensor([says], dtype=torch.float32, device=group.device)
        dist.all_reduce(flag)
        return float(flag.item())

    return protocol.run_with_workers(step, group.is_chief, agree)


def gradient_bytes(model: Any) -> int:
    """Bytes of the gradients DDP all-reduces: every parameter that takes one."""
    return sum(int(p.numel()) * p.element_size() for p in model.parameters() if p.requires_grad)


def measure_network(torch: Any, group: Group, size: int) -> dict[str, Any]:
    """Time an all-reduce of a float32 buffer the size of the gradients (capped) over the
    group, as DDP all-reduces them (``gpuscout.measure.network``). Every rank calls it, after
    the same last step."""
    import torch.distributed as dist

    elements = network.buffer_elements(size)
    buffer = torch.ones(elements, dtype=torch.float32, device=group.device)

    def once() -> None:
        dist.all_reduce(buffer)
        if group.device.startswith("cuda"):
            torch.cuda.synchronize(group.device)

    return network.fields(size, elements, group.world, network.time_allreduce(once))


def gather_rows(torch: Any, row: WorkerRun, group: Group) -> list[WorkerRun]:
    """Every rank's row, all-gathered as fixed-size int32 words (what gloo and NCCL both
    move); kept by the chief, empty elsewhere."""
    import torch.distributed as dist

    words = torch.from_numpy(worker_rows.as_words(worker_rows.pack(row)).copy()).to(group.device)
    gathered = [torch.empty_like(words) for _ in range(group.world)]
    dist.all_gather(gathered, words)
    if not group.is_chief:
        return []
    rows = np.stack([g.cpu().numpy() for g in gathered])
    return worker_rows.unpack(worker_rows.from_words(rows))


def after_steps(
    torch: Any, group: Group, model: Any, outcome: Outcome, batch: int, env: dict[str, Any]
) -> tuple[dict[str, Any], list[WorkerRun]]:
    """On every rank, after the same last step: the network the run saw (the Distribution's
    all-reduce fields) and, on the chief, every rank's row (``batch``: the global batch)."""
    fields = measure_network(torch, group, gradient_bytes(model))
    own = worker_rows.own_row(group.rank, group.workers[group.rank], outcome, batch, env)
    return fields, gather_rows(torch, own, group)
