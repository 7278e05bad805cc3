"""A user's own ``torch.nn.Module`` measured (``bench --model FILE.py:build``, issue 44): the
protocol of ``user_module.py`` loads it, the step of ``module_step.py`` trains it, eagerly or
compiled by ``torch.compile``, and the same protocol as every backend's times it.

Apart from ``backend.py`` (Keras 3 on PyTorch) because nothing here imports Keras: a plain
PyTorch model is measured as the user's own PyTorch loop would run it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, RunResult
from gpuscout.measure import environment
from gpuscout.measure.backends.torch import module_step, runtime, user_module
from gpuscout.measure.backends.torch.before_clock import before_the_clock
from gpuscout.measure.backends.torch.runtime import Device
from gpuscout.measure.backends.torch.step import count_flops
from gpuscout.measure.benchmark import MODEL_BATCH  # every backend's for a user's model
from gpuscout.measure.job import Job
from gpuscout.measure.protocol import BUILDING, Protocol
from gpuscout.measure.result import Prepared, compose

PLAIN = (
    "a plain PyTorch model (its file imports torch, not Keras): measured on PyTorch, without Keras"
)
AUTOCAST = {
    "fp32": "fp32: no autocast; the module's own dtypes (float32)",
    "mixed_float16": "mixed_float16: the forward pass and the loss under torch.autocast to "
    "float16, the weights and the optimizer in float32, the loss scaled by torch.amp.GradScaler",
    "mixed_bfloat16": "mixed_bfloat16: the forward pass and the loss under torch.autocast to "
    "bfloat16, the weights and the optimizer in float32 (no loss scaling)",
}


def run(job: Job) -> RunResult:
    """Measure the user's module on a PyTorch device; raises on failure (the caller stores it).
    TF32 (``config.tf32``, on a GPU) is set for the run and restored after it."""
    job.on_phase("starting PyTorch")
    torch = runtime.import_torch()
    device = runtime.resolve_device(torch, job.config.device)
    before = runtime.set_tf32(torch, job.config.tf32) if device.kind == "GPU" else None
    try:
        return _measure(torch, job, device)
    finally:
        if before is not None:
            runtime.restore_tf32(torch, before)


def prepare(
    torch: Any, config: BenchConfig, spec: Any, device: Device
) -> tuple[Prepared, user_module.TorchParts, Any, Any]:
    """The module on ``device`` in training mode (and ``channels_last`` where asked), its
    example batch placed there once, and what was assumed."""
    torch.manual_seed(config.seed)  # the weights build() makes and the example batch
    prep = Prepared()
    batch = config.batch_size or MODEL_BATCH[device.kind]
    prep.batch_size = batch
    prep.assumptions.append(PLAIN)
    if not config.batch_size:
        prep.assumptions.append(
            f"batch size {batch}: gpuscout's default on a {device.kind} (article 001 uses 256 "
            "on a GPU); set it with --batch-size"
        )
    parts = user_module.load(spec.function, batch)
    prep.assumptions += parts.assumptions
    if config.channels_last and not module_step.has_4d_tensor(torch, parts.inputs):
        raise UserError(
            f"--channels-last: --model {parts.label}'s example_batch gives no 4-D input (an "
            "image batch, N x C x H x W), the one torch.channels_last applies to.",
            "drop --channels-last for this model.",
        )
    parts.module.to(device.torch_name)
    if config.channels_last:
        parts.module.to(memory_format=torch.channels_last)
        prep.assumptions.append(
            "--channels-last: the module's 4-D weights and its 4-D inputs in "
            "torch.channels_last memory format (NHWC)"
        )
    parts.module.train()
    inputs = module_step.placed(torch, parts.inputs, device, config.channels_last)
    targets = module_step.placed(torch, parts.targets, device)
    prep.epoch_samples = config.epoch_samples
    prep.workload_hash = environment.hash_parts(spec.path.read_bytes(), config.model or "")
    prep.assumptions.append(
        "synthetic data: the module's example_batch, placed on the device once and fed to "
        "every step, so the device is measured, not an input pipeline"
    )
    return prep, parts, inputs, targets


def _measure(torch: Any, job: Job, device: Device) -> RunResult:
    config = job.config
    job.on_phase(BUILDING)
    prep, parts, inputs, targets = prepare(torch, config, job.model_spec, device)
    optimizer = module_step.make_optimizer(torch, parts)
    step = module_step.train_step(torch, parts, optimizer, config.precision, device)
    # counted on one eager step, before the clock starts (a compiled step does the same math,
    # and FlopCounterMode sees only the ops that run eagerly); the user's code failing in it
    # is refused, nothing stored
    counted = module_step.first_step(parts, lambda: count_flops(torch, step, inputs, targets))
    prep.flops_per_step = counted or None
    if prep.flops_per_step:
        prep.flops_method = (
            "counted by torch.utils.flop_counter.FlopCounterMode on one eager training step "
            "(matmuls, convolutions and attention)"
        )
    if config.compile:
        job.on_phase("compiling the step (torch.compile)")
        forward = module_step.compiled_forward(torch, parts)
        step = module_step.train_step(
            torch, parts, optimizer, config.precision, device, forward=forward
        )
        start = time.perf_counter()
        step(inputs, targets)
        runtime.synchronize(torch, device)
        prep.assumptions.append(
            f"{module_step.COMPILED}, before the clock started (that first step took "
            f"{time.perf_counter() - start:.1f} s); a recompilation later is warm-up"
        )
    prep.assumptions += [
        "PyTorch step: optimizer.zero_grad(set_to_none=True), the forward pass and the loss, "
        "loss.backward(), optimizer.step(); "
        + ("compiled" if config.compile else "eager (no torch.compile; --compile for it)")
        + "; each step waits for its results"
        + (" (torch.cuda.synchronize)" if device.kind == "GPU" else ""),
        AUTOCAST[config.precision],
    ]
    if config.precision == "mixed_float16" and device.kind == "CPU":
        prep.assumptions.append(
            "mixed_float16 on a CPU: autocast to float16 runs, but most CPUs have no float16 "
            "arithmetic (PyTorch converts, often far slower than fp32); measured as asked"
        )
    peak, rule, tf32 = before_the_clock(torch, job, device, prep)

    def one_step() -> Any:
        loss = step(inputs, targets)
        runtime.synchronize(torch, device)
        return loss  # the protocol reads it to the host after the step's time is taken

    outcome = Protocol(rule, job.on_progress).run(one_step, returns_loss=True)
    if outcome.broken is None:
        outcome = dataclasses.replace(
            outcome, broken=module_step.broken_weights(torch, parts.module)
        )
    env = {
        **environment.base_environment(),
        **runtime.torch_environment(torch, device, with_keras=False),
        "precision": config.precision,
        "xla": False,
        "torch_compile": config.compile,
        "channels_last": config.channels_last,
        "tf32_enabled": tf32,
        "workload_hash": prep.workload_hash,
    }
    memory = runtime.peak_memory(torch, device)
    return compose(config, device.name, prep, outcome, peak, memory, [], env, config.model or "")
