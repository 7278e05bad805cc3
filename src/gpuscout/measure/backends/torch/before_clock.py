"""What every PyTorch measurement does between building its step and starting the clock: the
FLOPs said, the device's peak found and said, TF32 said, the stopping rule set, memory freed
and the allocator's peak reset. One place for the eager Keras step, a plain module's step and
DDP's workers, so the three say and set the same."""

from __future__ import annotations

import gc
from typing import Any

from gpuscout.core.run_settings import tf32_run_note
from gpuscout.measure import peaks
from gpuscout.measure.backends.torch import runtime
from gpuscout.measure.backends.torch.runtime import Device
from gpuscout.measure.job import Job
from gpuscout.measure.protocol import INTERVAL_ASSUMPTION, StopRule
from gpuscout.measure.result import Prepared


def before_the_clock(
    torch: Any, job: Job, device: Device, prep: Prepared, replicas: int | None = None
) -> tuple[tuple[float | None, str], StopRule, bool]:
    """The peak for MFU (``replicas`` devices' over workers), the stopping rule and whether
    TF32 is on; ``prep``'s assumptions say each. Ends with the phase "measuring"."""
    config = job.config
    prep.say_flops(own_model=job.model_spec is not None)
    job.on_phase("finding the device's peak FLOP/s")
    peak = runtime.device_peak_flops(torch, device, config.precision)
    if replicas is not None:
        peak = peaks.replicated(peak, device.kind, replicas)
    prep.assumptions.append(f"peak for MFU: {peak[1]}")
    tf32 = runtime.tf32_enabled(torch) if device.kind == "GPU" else config.tf32
    if note := tf32_run_note(tf32, config.precision, device.kind, device.compute_capability):
        prep.assumptions.append(note)
    prep.assumptions.append(INTERVAL_ASSUMPTION)
    rule = StopRule(
        budget_s=config.seconds, fixed_steps=config.steps, fixed_warmup=config.warmup_steps
    )
    gc.collect()
    runtime.reset_peak_memory(torch, device)
    job.on_phase("measuring")
    return peak, rule, tf32
