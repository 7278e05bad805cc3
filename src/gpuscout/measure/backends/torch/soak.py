"""The soak job on PyTorch: the step ``bench --backend torch`` times, run by the shared soak
loop (:mod:`gpuscout.measure.soak_loop`) on bench's one placed synthetic batch: Keras 3 on
PyTorch's eager step (:func:`~gpuscout.measure.backends.torch.step.train_step`), or a plain
``torch.nn.Module``'s (``module_step.py``, without Keras). Each step's loss is read to the host
(``float``), so each step has finished before the next is timed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gpuscout.core.records import BenchConfig
from gpuscout.diagnose.records import SoakConfig
from gpuscout.measure.backends.torch import backend as backend_torch
from gpuscout.measure.backends.torch import runtime
from gpuscout.measure.backends.torch.runtime import Device
from gpuscout.measure.benchmark import check
from gpuscout.measure.protocol import BUILDING
from gpuscout.measure.soak_loop import soak_steps
from gpuscout.measure.user_spec import ModelSpec, is_torch_module_file
from gpuscout.workloads import Workload

KERAS_STEP = (
    "PyTorch backend: Keras 3 on PyTorch, the eager step bench times (forward, loss.backward(), "
    "the optimizer's apply; no torch.compile)"
)
MODULE_STEP = (
    "PyTorch step: optimizer.zero_grad(set_to_none=True), the forward pass and the loss, "
    "loss.backward(), optimizer.step(); eager (no torch.compile), as bench's"
)

# What a soak trains: the batch size, what was assumed, one step returning its loss tensor,
# and the check of the weights after the loop (why they are broken, or None).
Trained = tuple[int, list[str], Callable[[], Any], Callable[[], str | None]]


def run_soak(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The child's side of ``gpuscout soak --backend torch``: the loop's record, with what
    was assumed, for :func:`gpuscout.diagnose.soak.judge` in the parent."""
    config = SoakConfig.model_validate(payload)
    bench_config = config.bench_config()
    workload, spec = check(bench_config)
    torch = runtime.import_torch()
    device = runtime.resolve_device(torch, config.device)
    plain = spec is not None and is_torch_module_file(spec)
    trains = _module if plain else _keras
    with trains(torch, bench_config, workload, spec, device, emit) as (batch, said, step, broken):

        def one_step() -> float:
            loss = step()
            runtime.synchronize(torch, device)
            return float(loss)

        record = soak_steps(config.minutes, one_step, emit)
        if not record["bad_losses"] and not record["error"]:  # a NaN the loss never showed
            record["broken_weights"] = broken()
    return {
        "workload": config.model or config.workload,
        "device": device.name,
        "device_name": device.description,
        "batch_size": batch,
        "assumptions": said,
        **record,
    }


@contextmanager
def _keras(
    torch: Any, config: BenchConfig, workload: Workload | None, spec: ModelSpec | None,
    device: Device, emit: Callable[[dict[str, Any]], None],
) -> Iterator[Trained]:  # fmt: skip
    """A Keras model (a built-in workload or the user's) on PyTorch, under bench's session
    (precision policy, TF32 on a GPU; both restored after)."""
    from gpuscout.measure.backends.keras.weights import broken_weights
    from gpuscout.measure.backends.torch.step import train_step

    with backend_torch.session(config, device):
        emit({"phase": BUILDING})
        prep, x, y = backend_torch.prepare(torch, config, workload, spec, device)
        step = train_step(torch, prep.built, config.precision)
        yield (
            prep.batch_size,
            [*prep.assumptions, KERAS_STEP],
            lambda: step(x, y),
            lambda: broken_weights(prep.built.model),
        )


@contextmanager
def _module(
    torch: Any, config: BenchConfig, workload: Workload | None, spec: ModelSpec | None,
    device: Device, emit: Callable[[dict[str, Any]], None],
) -> Iterator[Trained]:  # fmt: skip
    """The user's own ``torch.nn.Module`` (``docs/torch.md``'s protocol), without Keras; TF32
    on a GPU set as bench sets it, and restored after."""
    from gpuscout.measure.backends.torch import module_bench, module_step

    before = runtime.set_tf32(torch, config.tf32) if device.kind == "GPU" else None
    try:
        emit({"phase": BUILDING})
        prep, parts, inputs, targets = module_bench.prepare(torch, config, spec, device)
        optimizer = module_step.make_optimizer(torch, parts)
        step = module_step.train_step(torch, parts, optimizer, config.precision, device)
        module_step.first_step(parts, lambda: step(inputs, targets))  # the user's code refused
        yield (
            prep.batch_size,
            [*prep.assumptions, MODULE_STEP, module_bench.AUTOCAST[config.precision]],
            lambda: step(inputs, targets),
            lambda: module_step.broken_weights(torch, parts.module),
        )
    finally:
        if before is not None:
            runtime.restore_tf32(torch, before)
