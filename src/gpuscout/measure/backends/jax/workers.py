"""The JAX side of runs over workers (``--workers`` on ``--backend jax``): one process per
worker, joined by ``jax.distributed`` with the first worker as the coordinator, then the
same sharded step as ``--devices`` under a Mesh of every process's devices.

JAX fixes its devices when its backends start, so a process joins before anything else runs
in JAX (:func:`join`), once. On a CPU the all-reduce between processes is JAX's CPU
collectives (gloo over TCP), which is why CI can run two workers on one machine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscout.core.records import WorkerRun
from gpuscout.measure import network, worker_rows
from gpuscout.measure.protocol import Outcome, Protocol
from gpuscout.scale import distribute
from gpuscout.scale.distribute import Plan

if TYPE_CHECKING:  # sharding imports this module
    from gpuscout.measure.backends.jax.sharding import Replicas

CPU_COLLECTIVES = "gloo"  # JAX's TCP collectives between CPU processes (no MPI needed)


def join(jax: Any, plan: Plan, worker_timeout_s: float, on_phase: Callable[[str], None]) -> None:
    """Make this process worker ``plan.task_index`` of ``plan.workers``; the coordinator is
    ``plan.workers[0]``, the chief (it listens on that port; the others connect to it).

    Says :data:`~gpuscout.scale.distribute.CONNECTING` first: the measuring child's parent
    gives that phase ``--worker-timeout`` and then ends this process with a message that
    says why. JAX's own deadlines come after it (:func:`~gpuscout.scale.distribute.
    jax_timeouts`), because JAX aborts the whole process when one passes, with a stack trace.
    """
    _use_cpu_collectives(jax)
    on_phase(distribute.CONNECTING)
    jax.distributed.initialize(
        coordinator_address=plan.workers[0],
        num_processes=len(plan.workers),
        process_id=plan.task_index,
        **distribute.jax_timeouts(worker_timeout_s),
    )


def _use_cpu_collectives(jax: Any) -> None:
    """gloo for CPU all-reduces between processes: the default since JAX 0.5, none before
    (a multi-process CPU step then fails to compile its all-reduce)."""
    for option, value in (
        ("jax_cpu_collectives_implementation", CPU_COLLECTIVES),
        ("jax_cpu_enable_gloo_collectives", True),  # its name in older JAX
    ):
        try:
            jax.config.update(option, value)
            return
        except (AttributeError, ValueError):  # not an option of this JAX
            continue


def place_global(jax: Any, tree: Any, sharding: Any) -> Any:
    """Host arrays that every worker holds whole (the same seed makes the same batch and
    parameters) as global arrays under ``sharding``: each process puts only the parts its own
    devices hold (a batch's rows, or a whole replicated copy), and nothing crosses the
    network. ``jax.device_put`` cannot place on another process's devices."""

    def one(a: Any) -> Any:
        host = np.asarray(a)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

    return jax.tree.map(one, tree)


def agreed_run(
    jax: Any,
    protocol: Protocol,
    step: Callable[[], Any],
    chief: bool,
    split: Any,
    whole: Any,
    on_stop: Callable[[Outcome], None] = lambda _: None,
) -> Outcome:
    """Run ``step`` (returning its loss, ready) until the chief's protocol says stop, then
    ``on_stop`` of the outcome (on every worker, after the same step: it may run collectives).

    Every worker must run the same number of steps, or the last collective waits for ever:
    after each timed step one all-reduce of a scalar, outside the timing, tells every worker
    whether the chief stops (as the TensorFlow backend's multi-worker loop does). ``split``
    and ``whole``: the Mesh's batch and replicated shardings.
    """
    count = int(split.mesh.devices.size)
    summed = jax.jit(lambda flags: flags.sum(), out_shardings=whole)

    def agree(says: float) -> float:
        return float(summed(place_global(jax, np.full((count,), says, np.float32), split)))

    outcome = protocol.run_with_workers(step, chief, agree)
    on_stop(outcome)
    return outcome


def measure_network(jax: Any, split: Any, whole: Any, gradient_bytes: int) -> dict[str, Any]:
    """Time an all-reduce of a float32 buffer the size of the gradients (capped) between the
    Mesh's devices, as the step's gradients are all-reduced: one row per device, summed into
    an array every device holds (XLA compiles that into an all-reduce; the first call,
    untimed, compiles it). Each process makes only its own devices' rows, on the device.
    Every worker calls it, after the same last step (``gpuscout.measure.network``)."""
    ranks = int(split.mesh.devices.size)
    elements = network.buffer_elements(gradient_bytes)
    rows = jax.make_array_from_callback(
        (ranks, elements), split, lambda index: np.ones((1, elements), np.float32)
    )
    total = jax.jit(lambda a: a.sum(axis=0), out_shardings=whole)

    def once() -> None:
        total(rows).block_until_ready()

    return network.fields(gradient_bytes, elements, ranks, network.time_allreduce(once))


def after_steps(
    jax: Any, replicas: Replicas, outcome: Outcome, state: Any, batch: int, env: dict[str, Any]
) -> list[WorkerRun]:
    """On every worker, after the same last step: the network the run saw, over an all-reduce
    the size of the gradients (the trainable variables of ``state``, as they are now), into
    ``replicas.network``; then this worker's row (``env``: its own environment) sent to the
    chief, which gets every worker's row back (the others: none)."""
    r = replicas
    size = sum(int(a.size) * a.dtype.itemsize for a in state[0])
    r.network.update(measure_network(jax, r.split(), r.replicated(), size))
    own = worker_rows.own_row(r.task_index, r.workers[r.task_index], outcome, batch, env)
    rows = gather_rows(jax, own, chief=r.task_index == 0)
    if rows is None:
        return []
    if r.task_index != 0:  # the chief's run holds this worker's row now
        r.network["row_sent"] = True
    return rows


def gather_rows(jax: Any, row: WorkerRun, chief: bool) -> list[WorkerRun] | None:
    """Every worker's row (``worker_rows``), all-gathered between the processes through JAX's
    own collectives (``process_allgather``: one buffer per process); kept by the chief only,
    empty elsewhere. Every worker calls it once, after ``measure_network``. A peer gone by
    then: None (no rows sent), and the run stands (JAX's error is a RuntimeError under every
    name its versions gave it)."""
    from jax.experimental import multihost_utils

    try:
        gathered = multihost_utils.process_allgather(worker_rows.pack(row))
    except RuntimeError:
        return None
    return worker_rows.unpack(np.asarray(gathered)) if chief else []
