"""A PyTorch run over workers: one process per worker, each training its rows of one global
batch with the model in ``DistributedDataParallel``, the chief's timing the run's and its
stored run holding every worker's row, as the TensorFlow and JAX backends' multi-worker runs.

The model is the one-device run's (a built-in workload, or a user's Keras model, on Keras 3's
PyTorch backend, where a ``keras.Model`` is a ``torch.nn.Module`` whose variables are its
``torch.nn.Parameter``s): DDP wraps it as it wraps any module, and the step is the one-device
step with its forward pass called through the wrapper, so ``backward`` all-reduces the
gradients before the optimizer reads them.
"""

from __future__ import annotations

from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.records import Distribution, RunResult, WorkerRun
from gpuscout.measure import environment
from gpuscout.measure.backends.keras.weights import checked
from gpuscout.measure.backends.torch import backend, runtime
from gpuscout.measure.backends.torch import distributed as ddp
from gpuscout.measure.backends.torch.before_clock import before_the_clock
from gpuscout.measure.backends.torch.runtime import Device
from gpuscout.measure.backends.torch.step import count_flops, train_step
from gpuscout.measure.job import Job
from gpuscout.measure.protocol import BUILDING, Outcome, Protocol
from gpuscout.measure.result import compose
from gpuscout.scale import distribute
from gpuscout.scale.distribute import Plan


def run(job: Job, plan: Plan) -> RunResult:
    """Measure ``job.config`` as worker ``plan.task_index`` of ``plan.workers``; raises on
    failure (the caller stores it). The process group is left on every way out."""
    config = job.config
    job.on_phase("starting PyTorch")
    torch = runtime.import_torch()
    device = _device(torch, plan, config.device)
    group = ddp.join(torch, plan, device.torch_name, config.worker_timeout_s, job.on_phase)
    try:
        with backend.session(config, device):
            return _measure(torch, job, device, group)
    finally:
        ddp.leave()


def _device(torch: Any, plan: Plan, requested: str | None) -> Device:
    """``--device`` if given, else GPU ``LOCAL_RANK`` (one GPU per worker on a host, as
    torchrun's scripts take), else the CPU; UserError where a host runs more workers than it
    has GPUs."""
    if requested:
        return runtime.resolve_device(torch, requested)
    found = runtime.all_devices(torch)
    gpus = [d for d in found.values() if d.kind == "GPU"]
    if not gpus:
        return found["CPU:0"]
    local = ddp.local_rank(plan.workers, plan.task_index)
    if local >= len(gpus):
        raise UserError(
            f"worker {plan.task_index} is worker {local + 1} on its host, which has "
            f"{len(gpus)} GPU(s): DDP takes one GPU per worker.",
            "start at most one worker per GPU on each host, or pass --device CPU:0.",
        )
    return gpus[local]


def _measure(torch: Any, job: Job, device: Device, group: ddp.Group) -> RunResult:
    import keras

    config = job.config
    job.on_phase(BUILDING)
    per, whole = distribute.batches(
        config, group.world, backend.default_batch(config, job.workload, device)
    )
    global_config = config.model_copy(update={"batch_size": whole, "global_batch_size": None})
    prep, x, y = backend.prepare(torch, global_config, job.workload, job.model_spec, device)
    if not config.batch_size and not config.global_batch_size:
        prep.assumptions.insert(
            0,
            f"batch size {per} per replica: gpuscout's default on a {device.kind} (article "
            "001 uses 256 on a GPU); set it with --batch-size",
        )
    x, y = ddp.rows_of((x, y), group, per, keras)
    wrapped = ddp.wrap(torch, prep.built.model, group)
    step = train_step(torch, prep.built, config.precision, call=wrapped)
    if job.model_spec is not None:  # every rank counts its rows' step: the same collectives
        counted = count_flops(torch, step, x, y)
        prep.flops_per_step = counted * group.world or None
        if prep.flops_per_step:
            prep.flops_method = (
                "counted by torch.utils.flop_counter.FlopCounterMode on one training step "
                "of one worker's rows (matmuls, convolutions and attention), times the workers"
            )
    prep.assumptions += _notes(group, device, per, whole)
    prep.assumptions.append(
        "PyTorch backend: Keras 3 on PyTorch, eager (no torch.compile); the step is the "
        "model's forward pass (through DDP), loss.backward() and the optimizer's apply; each "
        "step waits for its results" + (" (torch.cuda.synchronize)" if device.kind == "GPU" else "")
    )
    peak, rule, tf32 = before_the_clock(torch, job, device, prep, replicas=group.world)
    env = {  # before the steps: each worker sends the chief its own after them
        **environment.base_environment(),
        **runtime.torch_environment(torch, device),
        "precision": keras.mixed_precision.global_policy().name,
        "xla": False,
        "tf32_enabled": tf32,
        "workload_hash": prep.workload_hash,
        "torch_distributed": group.backend,
    }

    def one_step() -> Any:
        loss = step(x, y)
        runtime.synchronize(torch, device)
        return loss

    outcome: Outcome = ddp.agreed_run(torch, Protocol(rule, job.on_progress), one_step, group)
    fields, rows = ddp.after_steps(torch, group, prep.built.model, outcome, whole, env)
    outcome = checked(outcome, prep.built.model.weights)
    name = config.model if job.model_spec is not None and config.model else config.workload
    where = f"{group.world} workers x {device.name}"
    result = compose(
        config, where, prep, outcome, peak, runtime.peak_memory(torch, device), [], env, name
    )
    return result.model_copy(update={"distribution": _spread(group, device, whole, fields, rows)})


def _spread(
    group: ddp.Group, device: Device, batch: int, fields: dict[str, Any], rows: list[WorkerRun]
) -> Distribution:
    """The run's record of how it was spread: one replica per worker, each on its device."""
    spread = distribute.spread(
        distribute.TORCH_DDP, [device.name], False, group.world, batch, group.world
    )
    sent = not group.is_chief  # the chief's run holds this worker's row now
    return spread.model_copy(update={**fields, "worker_runs": rows, "row_sent": sent})


def _notes(group: ddp.Group, device: Device, per: int, whole: int) -> list[str]:
    """What a DDP run assumes, beside what every data-parallel run says."""
    where = f"{group.world} workers ({', '.join(group.workers)}), each on {device.name}"
    notes = distribute.replica_notes(
        f"torch.nn.parallel.{distribute.TORCH_DDP} over torch.distributed ({group.backend})",
        where, group.world, per, whole, None,
    )  # fmt: skip
    return [
        *notes,
        "the step is the one-device step with the model called through DDP: each worker's "
        "loss is the mean over its own rows and backward averages every gradient over the "
        "workers (DDP's bucketed all-reduce, overlapping the backward pass), so the update "
        "is the global batch's",
        "every worker makes the same global batch and initial state (the same seed; DDP "
        "also broadcasts rank 0's parameters) and trains on its own rows of the batch; the "
        f"rendezvous is the chief's address {group.workers[0]} (MASTER_ADDR:MASTER_PORT), "
        f"RANK the worker's place in the list, LOCAL_RANK its place on its host",
        "timing is the chief's (task 0); the stop decision is shared by one extra "
        "all-reduce of a scalar after each step, outside the timed step",
    ]
