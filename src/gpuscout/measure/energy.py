"""Energy over a run's measured steps, from the device monitor's samples.

Why after the fact: the protocol knows where warm-up ended only once it has seen the steady
state (:mod:`gpuscout.measure.protocol`), so nobody can read a counter "at the start of the
measured steps" when they start. The monitor instead keeps a bounded history of the
cumulative counters (NVML's total energy per GPU, RAPL's per CPU package) and of GPU power,
and every progress message of the measuring child anchors the child's step count to the
monitor's clock. The window's two edges are then placed from the nearest anchor and the
steps' own times, and each counter is read at both edges by linear interpolation between the
samples around it (10 Hz): start-up, compilation and warm-up are left out. A GPU without the
counter (before Volta) has its sampled power integrated over the same window instead, and the
source says which.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from gpuscout.core.records import DeviceEnergy, Energy, RunResult
from gpuscout.core.units import fmt_seconds
from gpuscout.workloads import WORKLOADS

_T = TypeVar("_T")
NVML_COUNTER = "nvml total energy"
NVML_POWER = "nvml power x time"
# A window shorter than this many sampling intervals is mostly interpolation: not reported.
MIN_SAMPLES_SPANNED = 2

Sample = tuple[float, dict[str, float]]  # monitor time (s), counter key -> value
Anchor = tuple[float, int, float]  # monitor time of receipt, steps done, child's elapsed s


@dataclass(frozen=True)
class Watched:
    """What the monitor could read: the GPUs it watched (NVML index, name), why it read no GPU
    (None if it did), the CPU's packages' source (None if unreadable) and why not."""

    gpus: Sequence[tuple[int, str]]
    gpu_notice: str | None
    cpu_source: str | None
    cpu_reason: str | None
    interval_s: float


@dataclass
class EnergyLog:
    """The monitor's counter samples and the child's progress anchors, each at most
    ``max_points`` long: when full, every other entry is dropped (the newest kept), so memory
    stays bounded however long a run lasts and the resolution coarsens evenly."""

    max_points: int
    samples: list[Sample] = field(default_factory=list)
    anchors: list[Anchor] = field(default_factory=list)

    def sample(self, t: float, row: dict[str, float]) -> None:
        _bounded(self.samples, (t, row), self.max_points)

    def anchor(self, t: float, steps: int, elapsed_s: float) -> None:
        _bounded(self.anchors, (t, steps, elapsed_s), self.max_points)


def _bounded(entries: list[_T], entry: _T, limit: int) -> None:
    entries.append(entry)
    if len(entries) >= limit:
        entries[:] = entries[-1::-2][::-1]  # every other one, counted back from the newest


def seq_len(result: RunResult) -> int | None:
    """The run's sequence length, for a built-in workload that has one (tokens = samples x
    seq_len); None for the others and for a user's model, whose inputs gpuscout cannot read."""
    workload = WORKLOADS.get(result.config.workload)
    if result.config.model or workload is None or "seq_len" not in workload.dims:
        return None
    return int(result.config.dims.get("seq_len", workload.dims["seq_len"]))


def run_energy(
    result: RunResult,
    samples: Sequence[Sample],
    anchors: Sequence[Anchor],
    watched: Watched,
    seq_len: int | None = None,
) -> Energy | None:
    """The energy of ``result``'s measured steps; None for a run with no measured steps."""
    if result.status not in ("ok", "diverged") or result.mode != "train":
        return None
    if result.warmup is None or result.measured_steps <= 0:
        return None
    first = result.warmup.steps
    last = first + result.measured_steps
    times = result.step_times_s
    kind = result.device.split(",")[0].split(":")[0].strip().upper()
    if kind not in ("GPU", "CPU"):
        return Energy(reason=f"energy is read on GPUs (NVML) and CPUs (RAPL), not {kind}")
    if kind == "GPU" and watched.gpu_notice:
        return Energy(reason=watched.gpu_notice)
    if kind == "CPU" and watched.cpu_source is None:
        return Energy(reason=f"RAPL not readable here: {watched.cpu_reason}")
    if len(times) < last or not anchors:
        return Energy(
            reason="the monitor did not see the measured steps' times (an in-process run)"
        )
    t0, t1 = step_end(anchors, times, first), step_end(anchors, times, last)
    if t1 - t0 < MIN_SAMPLES_SPANNED * watched.interval_s:
        return Energy(
            reason=f"the measured steps lasted {fmt_seconds(t1 - t0)}, under "
            f"{MIN_SAMPLES_SPANNED} of the monitor's samples: measure longer (--seconds)"
        )
    if kind == "GPU":
        devices, why = _gpus(samples, watched, len(result.device.split(",")), t0, t1)
    else:
        devices, why = _packages(samples, watched, t0, t1)
    if why is not None:
        return Energy(reason=why)
    joules = sum(d.joules for d in devices)
    sources = {d.source for d in devices}
    per_sample = joules / (result.measured_steps * result.batch_size) if result.batch_size else None
    return Energy(
        source=NVML_POWER if NVML_POWER in sources else sources.pop(),
        joules=joules,
        seconds=t1 - t0,
        joules_per_step=joules / result.measured_steps,
        joules_per_sample=per_sample,
        joules_per_token=per_sample / seq_len if per_sample is not None and seq_len else None,
        devices=devices,
    )


def _gpus(
    samples: Sequence[Sample], watched: Watched, used: int, t0: float, t1: float
) -> tuple[list[DeviceEnergy], str | None]:
    if len(watched.gpus) != used:
        return [], (
            f"the monitor watched {len(watched.gpus)} GPU(s) and the run used {used}: which "
            "NVML GPUs are the run's is unknown (CUDA_VISIBLE_DEVICES by UUID?)"
        )
    out = []
    for index, name in watched.gpus:
        counter = _series(samples, f"gpu{index}.energy_j")
        joules, source = _delta(counter, t0, t1), NVML_COUNTER
        stuck = joules == 0
        if not joules:  # no counter, or one that did not move while the GPU worked: power
            joules, source = integral(_series(samples, f"gpu{index}.power_w"), t0, t1), NVML_POWER
        if joules is None:
            counter_said = "a total energy that did not move" if stuck else "no total energy"
            return [], f"NVML reported {counter_said} and no power for GPU {index} ({name})"
        out.append(DeviceEnergy(device=f"GPU {index} ({name})", joules=joules, source=source))
    return out, None


def _packages(
    samples: Sequence[Sample], watched: Watched, t0: float, t1: float
) -> tuple[list[DeviceEnergy], str | None]:
    names = sorted({k for _, row in samples for k in row if k.startswith("cpu.")})
    out = []
    for key in names:
        joules = _delta(_series(samples, key), t0, t1)
        if joules is None:  # the reader failed part-way: its reason is the monitor's
            return (
                [],
                f"RAPL not readable here: {watched.cpu_reason or 'no reading after the steps'}",
            )
        if joules == 0:  # a package under load always draws power: the counter is a stub
            return [], (
                f"RAPL not readable here: {key[4:]}'s counter did not move over the measured "
                "steps (a virtual machine can show a counter that is never updated)"
            )
        assert watched.cpu_source is not None
        out.append(DeviceEnergy(device=key[4:], joules=joules, source=watched.cpu_source))
    if not out:
        return [], f"RAPL not readable here: {watched.cpu_reason or 'no package was read'}"
    return out, None


def step_end(anchors: Sequence[Anchor], times: Sequence[float], k: int) -> float:
    """The monitor's time at which ``k`` steps had ended (k = 0: the first one's start).

    The child's clock is mapped to the monitor's by the smallest receipt-minus-elapsed over
    the anchors (a message is never received before it is sent); from the anchor nearest in
    steps, the steps' own times walk to step ``k`` (the gaps between steps over that short
    stretch, at most ~0.1 s of steps, are left out).
    """
    offset = min(t - elapsed for t, _, elapsed in anchors)
    _, n, elapsed = min(anchors, key=lambda a: abs(a[1] - k))
    walked = sum(times[n:k]) if k >= n else -sum(times[k:n])
    return offset + elapsed + walked


def _series(samples: Sequence[Sample], key: str) -> list[tuple[float, float]]:
    return [(t, row[key]) for t, row in samples if key in row]


def value_at(points: Sequence[tuple[float, float]], t: float) -> float | None:
    """The value at ``t``, linear between the samples around it; None outside them."""
    for (ta, va), (tb, vb) in itertools.pairwise(points):
        if ta <= t <= tb:
            return va if tb == ta else va + (vb - va) * (t - ta) / (tb - ta)
    return None


def _delta(points: Sequence[tuple[float, float]], t0: float, t1: float) -> float | None:
    a, b = value_at(points, t0), value_at(points, t1)
    return b - a if a is not None and b is not None and b >= a else None


def integral(points: Sequence[tuple[float, float]], t0: float, t1: float) -> float | None:
    """The area under the sampled values from ``t0`` to ``t1`` (trapezoids; W x s = J)."""
    a, b = value_at(points, t0), value_at(points, t1)
    if a is None or b is None:
        return None
    inside = [(t0, a), *[(t, v) for t, v in points if t0 < t < t1], (t1, b)]
    return sum((tb - ta) * (va + vb) / 2 for (ta, va), (tb, vb) in itertools.pairwise(inside))
