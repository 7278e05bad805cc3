"""The one interface every measuring backend gives the rest of gpuscout.

``measure``, ``predict`` and ``scale`` never import a backend's package: they ask
:func:`gpuscout.measure.backends.get` for the backend by name and call these functions, as
Keras 3 keeps ``src/backend/<name>/`` behind one interface. Each backend package has an
``entry.py`` module that implements this protocol (a module satisfies a ``Protocol`` for
mypy); a backend that cannot do something yet raises :class:`~gpuscout.core.errors.UserError`
saying so, in one line. So the import graph has no circle through a backend's folder: a
backend imports the measuring core, never the other way round (``tests/test_layers.py``).

Nothing here imports a framework: the arguments are plain data and gpuscout's own records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from gpuscout.core.records import RunResult
    from gpuscout.core.step_ir import StepIR
    from gpuscout.measure.job import Job

Emit = Callable[[dict[str, Any]], None]


class Backend(Protocol):
    """What a backend does: train and time a step, trace it for predict, diagnose, soak."""

    def start_process(self) -> None:
        """Called first in a measuring child that runs a job on this backend (before the job's
        modules import Keras): TensorFlow imports itself there so its start-up chatter is
        hidden; the others need nothing."""

    def run(self, job: Job) -> RunResult:
        """Measure ``job`` (a built-in workload or the user's model); raises on failure (the
        caller stores it)."""

    def trace_step(
        self, workload: str, dims: Mapping[str, int], batch: int, precision: str
    ) -> StepIR:
        """A built-in workload's training step, traced (nothing runs on a device)."""

    def trace_abstract_step(
        self, workload: str, dims: Mapping[str, int], batch: int, precision: str
    ) -> StepIR:
        """The same step traced from shapes alone, without weights (a decoder LLM's)."""

    def trace_user_step(self, model_spec: str, batch: int, precision: str) -> StepIR:
        """The user's model's training step, traced."""

    def trace_forward(
        self, workload: str | None, model_spec: str | None, dims: Mapping[str, int],
        batch: int, precision: str,
    ) -> StepIR:  # fmt: skip
        """One forward pass (inference) of a workload or of the user's model, traced."""

    def trace_live_step(self, model: Any, batch: int, precision: str) -> StepIR:
        """The step of a model already built in this process (``ScoutCallback``)."""

    def doctor(self, payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
        """``gpuscout doctor``'s measurements, in the measuring child."""

    def soak(self, payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
        """``gpuscout soak``'s loop, in the measuring child."""

    def tf32_enabled(self) -> bool:
        """Whether this process's framework runs float32 matmuls as TF32 right now."""

    def fit_device(self) -> tuple[str, str]:
        """The device the framework trains on in this process, as gpuscout names it (GPU:0,
        CPU:0), and its hardware."""
