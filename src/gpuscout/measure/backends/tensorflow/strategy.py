"""The TensorFlow side of data-parallel runs: the strategy, and the loop that trains under it.

``MirroredStrategy`` replicates the step on the devices of this process; on a machine without
GPUs they are *logical* CPU devices (``tf.config.set_logical_device_configuration``), which
run TensorFlow's real all-reduce code but share the same cores. ``MultiWorkerMirroredStrategy``
joins the workers named in ``TF_CONFIG``. Both must be set up before TensorFlow runs any op,
which is why a data-parallel run always starts in a fresh measuring process.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuscout.core.errors import GpuscoutError, UserError
from gpuscout.core.records import WorkerRun
from gpuscout.measure import network, worker_rows
from gpuscout.measure.backends.keras.models import Built
from gpuscout.measure.backends.tensorflow.train import train_step_function
from gpuscout.measure.protocol import Outcome, Protocol
from gpuscout.scale import distribute
from gpuscout.scale.distribute import MULTI_WORKER, Plan


@dataclass(frozen=True)
class Replicas:
    """A started strategy and what it spans."""

    strategy: Any
    plan: Plan
    devices: list[str]  # this process's devices, "CPU:0", "GPU:1"
    logical: bool  # CPU devices split from one physical CPU
    workers: int
    replicas: int  # in all workers together
    # Over workers, the network the run saw (gpuscout.measure.network), filled in after the
    # timed steps: the Distribution's all-reduce fields.
    network: dict[str, Any] = field(default_factory=dict)
    # On the chief, every worker's own row (gpuscout.measure.worker_rows), gathered after the
    # network figure: the Distribution's worker_runs. Empty on the other workers.
    worker_runs: list[WorkerRun] = field(default_factory=list)

    @property
    def address(self) -> str:
        """This worker's address, as the run's workers list names it."""
        return self.plan.workers[self.plan.task_index] if self.plan.workers else ""

    @property
    def name(self) -> str:
        """The run's device column: "CPU:0,CPU:1", or "2 workers x GPU:0,GPU:1"."""
        local = ",".join(self.devices)
        return f"{self.workers} workers x {local}" if self.workers > 1 else local


def start(tf: Any, plan: Plan, timeout_s: float, on_phase: Callable[[str], None]) -> Replicas:
    """Create the strategy ``plan`` asks for; call before anything else runs in TensorFlow."""
    if plan.strategy == MULTI_WORKER:
        os.environ["TF_CONFIG"] = distribute.tf_config(plan.workers, plan.task_index)
        on_phase(distribute.CONNECTING)
        options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout_s)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        devices = [d.split("device:")[-1] for d in strategy.extended.worker_devices]
        return Replicas(
            strategy, plan, devices, False, len(plan.workers), strategy.num_replicas_in_sync
        )
    devices, logical = _local_devices(tf, plan)
    strategy = tf.distribute.MirroredStrategy([f"/{d}" for d in devices])
    return Replicas(strategy, plan, devices, logical, 1, strategy.num_replicas_in_sync)


def _local_devices(tf: Any, plan: Plan) -> tuple[list[str], bool]:
    gpus = tf.config.list_physical_devices("GPU")
    if plan.names:
        kind = plan.names[0].split(":")[0]
        wanted = max(int(n.split(":")[1]) for n in plan.names) + 1
        if kind == "GPU" and wanted > len(gpus):
            raise UserError(
                f"--devices {','.join(plan.names)}: this machine has {len(gpus)} GPU(s).",
                "name GPUs that exist (see nvidia-smi), or CPU:0,CPU:1 for logical CPU devices.",
            )
        if kind == "CPU" and wanted > 1:
            _split_cpu(tf, wanted)
        return list(plan.names), kind == "CPU" and wanted > 1
    assert plan.count is not None
    if gpus:
        if plan.count > len(gpus):
            raise UserError(
                f"--devices {plan.count}: this machine has {len(gpus)} GPU(s).",
                f"pass --devices {len(gpus)} or fewer (or CPU:0,CPU:1,... for logical CPUs).",
            )
        return [f"GPU:{i}" for i in range(plan.count)], False
    if plan.count > 1:
        _split_cpu(tf, plan.count)
    return [f"CPU:{i}" for i in range(plan.count)], plan.count > 1


def _split_cpu(tf: Any, n: int) -> None:
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
    except RuntimeError as exc:
        raise GpuscoutError(
            f"cannot split the CPU into {n} logical devices once TensorFlow has started "
            f"({exc}); data-parallel runs need a fresh process ('gpuscout bench' starts one)."
        ) from None


def distributed_loop(
    tf: Any,
    replicas: Replicas,
    built: Built,
    dataset: Any,
    precision: str,
    protocol: Protocol,
    sync: Callable[[], None],
    own_row: Callable[[Outcome], WorkerRun] | None = None,
) -> Outcome:
    """The custom loop under the strategy: ``strategy.run`` of the train step on each replica's
    share of a global batch; the gradients are all-reduced inside ``apply_gradients``.

    Each replica's loss is divided by the number of replicas, so the summed gradients are
    those of the mean loss over the global batch, as on one device.

    With several workers every one must run the same number of steps, or the last collective
    waits for ever: the chief's protocol decides, and after each (timed) step one extra
    all-reduce of a scalar, outside the timing, tells every worker whether to stop. Then,
    still on every worker, a short all-reduce of the gradients' size is timed: the network
    the run saw (``replicas.network``); and every worker's ``own_row`` of the outcome is
    all-gathered, so the chief holds every worker's row (``replicas.worker_runs``).
    """
    strategy = replicas.strategy
    step_on_batch = train_step_function(tf, built, precision, False, replicas.replicas)
    options = tf.data.Options()
    # Every worker makes the same synthetic batches: nothing to shard, each worker's replicas
    # take their share of each global batch.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    iterator = iter(strategy.experimental_distribute_dataset(dataset.with_options(options)))

    @tf.function  # type: ignore[untyped-decorator]
    def train_step(iterator: Any) -> Any:
        x, y = next(iterator)
        per_replica = strategy.run(step_on_batch, args=(x, y))
        return strategy.reduce("SUM", per_replica, axis=None)

    def one_step() -> Any:
        loss = train_step(iterator).numpy()  # the sum of the replicas' (divided) losses
        sync()
        return loss

    if replicas.workers == 1:
        return protocol.run(one_step, returns_loss=True)

    @tf.function  # type: ignore[untyped-decorator]
    def agree(flag: Any) -> Any:
        return strategy.reduce("SUM", strategy.run(tf.identity, args=(flag,)), axis=None)

    outcome = protocol.run_with_workers(
        one_step, replicas.plan.is_chief, lambda says: float(agree(tf.constant(says)).numpy())
    )
    # a peer gone after the timed steps: the run stands, without the network figure (and
    # without the rows: once a collective has failed, the next would only wait for its timeout)
    with contextlib.suppress(tf.errors.OpError):
        replicas.network.update(measure_network(tf, strategy, built, replicas.replicas))
        if own_row is not None:
            rows = gather_rows(tf, strategy, worker_rows.pack(own_row(outcome)))
            if replicas.plan.is_chief:
                replicas.worker_runs.extend(rows)
            else:  # the chief's run holds this worker's row now
                replicas.network["row_sent"] = True
    return outcome


def gather_rows(tf: Any, strategy: Any, packed: Any) -> list[WorkerRun]:
    """All-gather ``packed`` (this worker's row, ``worker_rows.pack``'s fixed-size bytes)
    between the strategy's replicas through its own collectives, the way ``measure_network``
    all-reduces: every worker calls it once, after the same collectives. Each local replica
    sends the same row, which ``worker_rows.unpack`` keeps once."""

    @tf.function  # type: ignore[untyped-decorator]
    def gather() -> Any:
        def on_replica() -> Any:
            mine = tf.constant(words[None, :], tf.int32)
            return tf.distribute.get_replica_context().all_gather(mine, axis=0)

        return strategy.run(on_replica)

    words = worker_rows.as_words(packed)  # TensorFlow's collectives move no uint8
    gathered = strategy.experimental_local_results(gather())[0].numpy()
    return worker_rows.unpack(worker_rows.from_words(gathered))


def measure_network(tf: Any, strategy: Any, built: Built, ranks: int) -> dict[str, Any]:
    """Time the strategy's own all-reduce (the one ``apply_gradients`` uses) of a float32
    buffer the size of the model's gradients, capped, between its ``ranks`` replicas: every
    worker calls it once, after the same last step. Each replica makes its buffer on its own
    device inside the step, so no host-to-device copy is timed; the fetch of one reduced
    value waits for the whole all-reduce."""
    gradient_bytes = sum(
        math.prod(v.shape) * tf.as_dtype(v.dtype).size for v in built.model.trainable_variables
    )
    elements = network.buffer_elements(gradient_bytes)

    @tf.function  # type: ignore[untyped-decorator]
    def allreduce() -> Any:
        def on_replica() -> Any:
            ones = tf.ones([elements], tf.float32)
            return tf.distribute.get_replica_context().all_reduce("SUM", ones)[0]

        return strategy.run(on_replica)

    def once() -> None:
        strategy.experimental_local_results(allreduce())[0].numpy()

    return network.fields(gradient_bytes, elements, ranks, network.time_allreduce(once))
