"""The JAX side of data-parallel runs (``--devices`` on ``--backend jax``): a ``jax.sharding``
Mesh over this machine's devices, the batch split along its first axis, the parameters and
optimizer state replicated.

The step is the one-device step, jitted with those shardings: the loss is the mean over the
global batch, so its gradients are the global batch's, and XLA's SPMD partitioner compiles the
all-reduce that makes them so into the step (nothing is divided by hand, as TensorFlow's
replicas must). On a machine without GPUs the devices are the host's CPU split by
``--xla_force_host_platform_device_count``, which the measuring child sets before JAX starts:
XLA's real partitioned step and all-reduce, on the same cores. Over workers (``--workers``)
the Mesh spans every process's devices, joined first by ``jax/workers.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.records import Distribution
from gpuscout.measure.backends.jax import workers as jax_workers
from gpuscout.measure.backends.jax.runtime import Device, all_devices
from gpuscout.scale import distribute
from gpuscout.scale.distribute import Plan

AXIS = "batch"
ONE_REPLICA = (
    "one replica on a Mesh: the same code as every count of a --scaling sweep, so efficiency "
    "isolates scaling (a Mesh of one device costs about what a plain run does: make bench-scale)"
)


@dataclass(frozen=True)
class Replicas:
    """The devices of a data-parallel JAX run and the Mesh over them (over workers: this
    process's devices, and a Mesh over every process's)."""

    devices: list[Device]
    mesh: Any
    host_devices: int  # the CPU devices JAX sees: more than one when the host was split
    workers: tuple[str, ...] = ()  # --workers: every worker's address, the chief first
    task_index: int = 0
    # Over workers, the network the run saw (gpuscout.measure.network), filled in after the
    # timed steps: the Distribution's all-reduce fields.
    network: dict[str, Any] = field(default_factory=dict)

    @property
    def logical(self) -> bool:
        """CPU devices split from one physical CPU (as TensorFlow's logical devices)."""
        return self.devices[0].kind == "CPU" and self.host_devices > 1

    @property
    def replicas(self) -> int:
        """Devices in the Mesh, every worker's together."""
        return int(self.mesh.devices.size)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.devices]

    @property
    def name(self) -> str:
        """The run's device column: "CPU:0,CPU:1", or "2 workers x CPU:0" (as TensorFlow's)."""
        local = ",".join(self.names)
        return f"{len(self.workers)} workers x {local}" if self.workers else local

    def replicated(self) -> Any:
        """The sharding of what every device holds whole: parameters, optimizer state, loss."""
        return _named(self.mesh)

    def split(self) -> Any:
        """The sharding of a global batch: its first axis split over the devices."""
        return _named(self.mesh, AXIS)

    def place(self, jax: Any, tree: Any, whole: bool = False) -> Any:
        """Host arrays (a global batch; ``whole``: the state every device holds) on the
        Mesh; over workers each process places only its own devices' parts."""
        sharding = self.replicated() if whole else self.split()
        if self.workers:
            return jax_workers.place_global(jax, tree, sharding)
        return jax.device_put(tree, sharding)

    def spread(self, batch: int) -> Distribution:
        """The run's record of how it was spread (``batch``: the global batch)."""
        strategy = distribute.JAX_DISTRIBUTED if self.workers else distribute.JAX_SHARDING
        spread = distribute.spread(
            strategy, self.names, self.logical, self.replicas, batch, len(self.workers) or 1
        )
        return spread.model_copy(update=self.network)

    def notes(self, per: int, batch: int) -> list[str]:
        """What the run assumes about its replicas, for its assumptions."""
        mesh, where = f"{distribute.JAX_SHARDING} (a Mesh of {self.replicas} devices)", self.name
        if self.workers:
            n = len(self.workers)
            mesh = (
                f"{distribute.JAX_DISTRIBUTED} + {distribute.JAX_SHARDING} (a Mesh of "
                f"{self.replicas} devices in {n} processes)"
            )
            where = f"{n} workers ({', '.join(self.workers)}), each on {', '.join(self.names)}"
        notes = distribute.replica_notes(
            mesh, where, self.replicas, per, batch,
            f"{self.host_devices} XLA host devices ({distribute.HOST_DEVICES_FLAG})"
            if self.logical else None,
            ONE_REPLICA,
        )  # fmt: skip
        notes.insert(
            1,
            "the batch split along its first axis, parameters and optimizer state replicated; "
            "the loss is the global batch's mean and XLA's SPMD partitioner compiles the "
            "gradient all-reduce into the jitted step",
        )
        if self.workers:
            notes += [
                "every worker makes the same global batch and initial state (the same seed) "
                "and places only its own devices' rows; the all-reduce between processes is "
                f"JAX's ({jax_workers.CPU_COLLECTIVES} on CPUs)",
                "timing is the chief's (task 0); the stop decision is shared by one extra "
                "all-reduce of a scalar after each step, outside the timed step",
            ]
        return notes


def _named(mesh: Any, *axes: str) -> Any:
    """NamedSharding(mesh, PartitionSpec(*axes)) (PartitionSpec is untyped in JAX)."""
    from jax import sharding

    spec: Any = sharding.PartitionSpec
    return sharding.NamedSharding(mesh, spec(*axes))


def start(jax: Any, plan: Plan) -> Replicas:
    """The Mesh ``plan`` asks for: its named devices, or ``plan.count`` GPUs (CPUs where this
    machine has none). UserError when they are not there, with how to get them."""
    import numpy as np
    from jax.sharding import Mesh

    found = all_devices(jax)
    if plan.workers:  # every process's devices of JAX's default platform: GPUs where any
        everyone = jax.devices()
        local = [d for d in found.values() if d.handle in set(everyone)]
        mesh = Mesh(np.array(everyone), (AXIS,))
        cpus = sum(d.kind == "CPU" for d in found.values())
        return Replicas(local, mesh, cpus, plan.workers, plan.task_index)
    if plan.names:
        missing = [n for n in plan.names if n not in found]
        if missing:
            raise UserError(
                f"--devices {','.join(plan.names)}: JAX sees {', '.join(found)} here.",
                _fix(plan.names[0].split(":")[0], len(plan.names)),
            )
        devices = [found[n] for n in plan.names]
    else:
        assert plan.count is not None
        gpus = [d for d in found.values() if d.kind == "GPU"]
        pool = gpus or [d for d in found.values() if d.kind == "CPU"]
        if plan.count > len(pool):
            kind = "GPU" if gpus else "CPU"
            raise UserError(
                f"--devices {plan.count}: JAX sees {len(pool)} {kind} device(s) here.",
                _fix(kind, plan.count, len(pool)),
            )
        devices = pool[: plan.count]
    mesh = Mesh(np.array([d.handle for d in devices]), (AXIS,))
    return Replicas(devices, mesh, sum(d.kind == "CPU" for d in found.values()))


def batch_norm_note(model: Any) -> str | None:
    """Said of a model with BatchNormalization split over several devices: the sharded step
    keeps one device's meaning, so each layer's batch statistics are over the global batch,
    all-reduced every step (synchronised batch norm), where TensorFlow's MirroredStrategy
    keeps them per replica; None for a model without it."""
    import keras

    def layers(layer: Any) -> list[Any]:
        inner = getattr(layer, "layers", None) or []
        return [layer] + [x for sub in inner for x in layers(sub)]

    found = [x for x in layers(model) if isinstance(x, keras.layers.BatchNormalization)]
    if not found:
        return None
    return (
        f"batch norm over the global batch: the {len(found)} BatchNormalization layers' "
        "statistics are all-reduced every step (synchronised batch norm, the one-device "
        "step's meaning), where TensorFlow's MirroredStrategy keeps them per replica: the two "
        "backends' data-parallel steps differ for this model, and so may their scaling"
    )


def _fix(kind: str, wanted: int, have: int | None = None) -> str:
    if kind == "GPU":
        fewer = f"pass --devices {have} or fewer, or " if have else ""
        return f"{fewer}name GPUs that exist (see nvidia-smi), or CPU:0,CPU:1 for CPU devices."
    return (
        "run it through the gpuscout command (its measuring process splits the CPU before JAX "
        f"starts), or set XLA_FLAGS={distribute.HOST_DEVICES_FLAG}={wanted} before JAX starts."
    )
