"""A user's model traced in the measuring child, bounded as ``bench`` bounds it.

``predict``, ``cost``, ``advise``, ``report`` and ``scout`` trace a user's ``--model`` (a
builder's step, or a ``.keras`` file's) to count its HLO. The builder is the user's code, run
to trace it: in this process a ``sys.exit(0)`` in it ended the command silently with exit 0,
a ``time.sleep`` hung it for ever, an ``os.chdir`` moved the report it then wrote, and a
config of gigabytes took all the memory there was (issue 43). So the trace runs where ``bench``
runs the builder, in ``python -m gpuscout.measure.child`` (:func:`gpuscout.measure.runner.
run_child`): its own process (its working directory and exit are its own), its stdout sent to
the command's stderr (it cannot corrupt ``--json``), killed with everything it started after
:data:`TIMEOUT_ENV` seconds without a word, and its memory capped (:data:`MEMORY_ENV`, applied
as ``RLIMIT_DATA`` once the framework is imported: it bounds the builder and the trace). How
it ends, whatever the way, is one line naming the builder (UserError, exit 2).
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
from collections.abc import Callable
from typing import Any, Literal

from gpuscout.core.errors import GpuscoutError, UserError
from gpuscout.core.step_ir import StepIR
from gpuscout.core.units import fmt_gb

# Seconds the tracing child may stay silent (importing the framework, then the builder and the
# trace): a ResNet-50 traces in about 60 s on 2 busy cores, so the default is ten times that.
TIMEOUT_ENV = "GPUSCOUT_TRACE_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
# Decimal GB the trace may allocate; by default the memory this machine has available when the
# trace starts (beyond that the kernel's OOM killer, or swap, would answer); 0: no limit.
MEMORY_ENV = "GPUSCOUT_TRACE_MEMORY_GB"
TRACING = "tracing the step"
Kind = Literal["train", "forward"]


@dataclasses.dataclass(frozen=True)
class TraceLimits:
    """The bounds a trace runs under, as the user may set them."""

    seconds: float
    memory_bytes: int | None  # None: no limit

    def memory_said(self) -> str:
        if self.memory_bytes is None:
            return "no limit"
        return fmt_gb(self.memory_bytes / 1e9)


def trace_limits() -> TraceLimits:
    """The limits from the environment (or their defaults), refused in one line if unusable:
    a typo must not mean "no limit"."""
    given = _positive(TIMEOUT_ENV, os.environ.get(TIMEOUT_ENV), "seconds", None)
    seconds = DEFAULT_TIMEOUT_S if given is None else given
    text = os.environ.get(MEMORY_ENV)
    if text is not None and text.strip() in ("0", "0.0"):
        return TraceLimits(seconds, None)
    gb = _positive(MEMORY_ENV, text, "GB", None)
    if gb is None:
        import psutil

        return TraceLimits(seconds, int(psutil.virtual_memory().available))
    return TraceLimits(seconds, int(gb * 1e9))


def _positive(name: str, text: str | None, unit: str, default: float | None) -> float | None:
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UserError(
            f"{name}='{text}' is not a number of {unit} gpuscout can use.",
            f"set {name} to a number of {unit} above 0, or unset it for the default.",
        )
    return value


def trace_user_step(
    model_spec: str, kind: Kind, batch: int, precision: str, backend: str
) -> StepIR:
    """The user's model's training step (``kind="train"``) or forward pass traced in the
    measuring child, bounded by :func:`trace_limits`; UserError, naming ``model_spec``,
    however the trace fails. Ctrl-C stops the child and raises KeyboardInterrupt here."""
    from gpuscout.measure.runner import STALL_S, run_child

    limits = trace_limits()
    payload = {
        "backend": backend,
        "model": model_spec,
        "kind": kind,
        "batch": batch,
        "precision": precision,
        "memory_bytes": limits.memory_bytes,
    }
    # The user's limit starts once the framework is imported (the child says TRACING): the
    # import says nothing for seconds, more on a busy machine, and is bounded by the child's
    # usual silence limit instead, so a short limit stops the builder, not the import.
    phases: set[str] = set()
    run = run_child(
        "trace", payload, None, lambda m: phases.add(str(m.get("phase", ""))),
        max(STALL_S, limits.seconds), deadlines={TRACING: (limits.seconds, "")}, monitored=False,
    )  # fmt: skip
    if run.interrupted:
        raise KeyboardInterrupt
    final = run.final
    if "report" in final:
        return StepIR(**final["report"]["ir"])
    if "user_error" in final:
        raise UserError(final["user_error"], final.get("fix"))
    if "error" in final:  # gpuscout's own failure (TensorFlow missing, say), as bench says it
        raise GpuscoutError(final["error"])
    if run.code is None and TRACING not in phases:
        raise UserError(
            f"--model {model_spec}: the child tracing it said nothing for "
            f"{max(STALL_S, limits.seconds):g} s while importing {backend} and was stopped.",
            "check that the framework imports (python -c 'import tensorflow'), then retry.",
        )
    raise _ended(f"--model {model_spec}", run.code, limits)


_RUN_ALONE = (
    "build the model outside gpuscout (call the function, or keras.saving.load_model) to see why."
)
# a plain PyTorch module fails in its step more often than in its builder, and has no .keras file
_RUN_ALONE_TORCH = (
    "call the function and run one training step in Python (the loss, loss.backward(), "
    "optimizer.step()) to see why."
)


def _ended(label: str, code: int | None, limits: TraceLimits) -> UserError:
    """The one line for a trace that gave no answer: a hang, an exit, a crash."""
    what = "while its step was traced"
    if code is None:  # killed here: it said nothing for the whole limit
        return UserError(
            f"{label}: tracing its step said nothing for {limits.seconds:g} s and was stopped "
            f"({TIMEOUT_ENV}): a builder that never returns (a sleep, a wait for input or the "
            "network), or a model slower to trace than that.",
            f"make the builder return its model; for a model that needs longer, set "
            f"{TIMEOUT_ENV}=SECONDS (now {limits.seconds:g}).",
        )
    if code >= 0:
        return UserError(
            f"{label} ended the process with exit code {code} {what} (sys.exit, exit() or "
            "os._exit in the builder or in what it imports).",
            "return the model from the builder instead of exiting.",
        )
    try:
        name = signal.Signals(-code).name
    except ValueError:  # a real-time signal: no name
        name = f"signal {-code}"
    if -code == signal.SIGKILL:
        return UserError(
            f"{label} was killed by SIGKILL {what}: often the kernel's out-of-memory killer "
            f"(the trace may use {limits.memory_said()}, {MEMORY_ENV}).",
            f"trace a smaller --batch-size, or set {MEMORY_ENV} to the GB it may use.",
        )
    return UserError(
        f"{label} crashed with {name} {what} (in the builder, or in the framework tracing it).",
        _RUN_ALONE,
    )


def trace_here(payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The child's side (``job == "trace"``): the framework imported, then memory capped, then
    the user's model built and traced. What fails is a UserError naming the model, so the child
    prints no traceback and the parent one line."""
    backend, spec = payload["backend"], payload["model"]
    from gpuscout.measure.backends import get

    tracer = get(backend)
    try:
        tracer.start_process()
    except ImportError as exc:
        raise UserError(
            f"tracing --model {spec} on {backend} needs {exc.name or backend}, which is not "
            "installed.",
            f"pip install 'gpuscout[{'cpu' if backend == 'tensorflow' else backend}]'.",
        ) from None
    emit({"phase": TRACING})
    _cap_memory(payload.get("memory_bytes"))
    batch, precision = int(payload["batch"]), str(payload["precision"])
    try:
        if payload["kind"] == "forward":
            ir = tracer.trace_forward(None, spec, {}, batch, precision)
        else:
            ir = tracer.trace_user_step(spec, batch, precision)
    except UserError as exc:
        # the builder's MemoryError, which call_function words as the builder's own failure
        # ("raised MemoryError at line 3"): here it is the limit this trace runs under
        if isinstance(exc.__context__, MemoryError):
            raise _out_of_memory(spec, batch, payload.get("memory_bytes")) from None
        raise
    except MemoryError:
        raise _out_of_memory(spec, batch, payload.get("memory_bytes")) from None
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UserError(
            f"--model {spec} could not be traced: {type(exc).__name__}: {first[:300]}.",
            _RUN_ALONE_TORCH if backend == "torch" else _RUN_ALONE,
        ) from None
    return {"ir": dataclasses.asdict(ir)}


def _out_of_memory(spec: str, batch: int, limit: int | None) -> UserError:
    shown = fmt_gb(limit / 1e9) if limit else "the memory there was"
    return UserError(
        f"--model {spec} needed more than {shown} while its step was traced at batch {batch} "
        f"({MEMORY_ENV}; by default the memory available when the trace started).",
        f"trace a smaller --batch-size, free memory, or set {MEMORY_ENV} to more GB.",
    )


def _cap_memory(limit: int | None) -> None:
    """RLIMIT_DATA (the process's writable private memory, which Python's and the frameworks'
    allocations are) set to ``limit`` bytes: an allocation past it fails as MemoryError."""
    try:
        import resource
    except ImportError:  # not on Windows: the time limit still holds
        return
    if not limit:
        return

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
