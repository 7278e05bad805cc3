"""A stored run as timestamped scalar series: what TensorBoard and MLflow are handed.

One place decides what is published (every step's time and throughput, the run's headline
figures, the device monitor's series) and when each value happened, so the two sinks agree.

Timestamps are real, reconstructed from the stored run: ``created_at`` is when the run ended
(to the second), each step ended ``sum(later step times)`` before that, and a monitor sample
``t`` seconds after the monitor started happened ``last t - t`` before the end. Good to the
second the run was stored with, and in the right order.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpuscout.core.records import RunResult


@dataclass(frozen=True)
class Scalar:
    """One value: ``group`` is ``step``, ``run`` or ``monitor``; ``step`` the x-axis (the step
    index, 0 for the run's figures, ms since the monitor started for its series)."""

    group: str
    name: str
    value: float
    step: int
    wall_time_s: float


def run_scalars(result: RunResult) -> list[Scalar]:
    """Every scalar to publish for ``result``, in time order within each series."""
    end = datetime.fromisoformat(result.created_at).timestamp()
    out: list[Scalar] = []
    remaining = sum(result.step_times_s)
    for i, seconds in enumerate(result.step_times_s):
        remaining -= seconds
        wall = end - remaining
        out.append(Scalar("step", "time_s", seconds, i, wall))
        if seconds > 0 and result.batch_size > 0:  # 0: batch not known, no samples/s
            out.append(Scalar("step", "samples_per_second", result.batch_size / seconds, i, wall))
    for name, value in result.headline().items():
        if value is not None:
            out.append(Scalar("run", name, float(value), 0, end))
    timeline = result.monitor_timeline
    times = [t for t in timeline.get("t", []) if t is not None]
    last = max(times, default=0.0)
    for column, values in timeline.items():
        if column == "t":
            continue
        for t, value in zip(timeline["t"], values, strict=False):
            if value is not None and t is not None:
                out.append(Scalar("monitor", column, value, round(t * 1000), end - (last - t)))
    return out
