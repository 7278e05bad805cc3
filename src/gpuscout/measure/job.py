"""The interface between the measuring core and a backend: one function, ``run(job)``.

``measure.benchmark.bench`` checks the settings (without any framework), picks the backend
named by ``config.backend`` (``measure/backends/tensorflow`` or ``measure/backends/jax``) and
calls its ``backend.run(job)``, which builds the workload, times its steps through the shared
:class:`~gpuscout.measure.protocol.Protocol` and returns a composed
:class:`~gpuscout.core.records.RunResult` (``measure.result.compose``), or raises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuscout.core.records import BenchConfig
from gpuscout.measure.protocol import Progress
from gpuscout.measure.user_spec import ModelSpec
from gpuscout.workloads import Workload


@dataclass(frozen=True)
class Job:
    """A checked measurement for a backend: what to measure, and where to report progress."""

    config: BenchConfig
    workload: Workload | None  # a built-in workload, or None for the user's model
    model_spec: ModelSpec | None
    on_progress: Callable[[Progress], None] | None
    on_phase: Callable[[str], None]
