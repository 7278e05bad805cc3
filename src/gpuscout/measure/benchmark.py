"""``bench``: the public entry of the measuring stage.

Checks the settings without TensorFlow (so a typo fails fast), then runs the TensorFlow backend
in this process. Every failure that happens *during* a measurement (out of memory, an error in
the user's model, Ctrl-C) comes back as a result with ``status`` oom or error, so the caller
can store it: failures are data. Bad input raises :class:`~gpuscout.errors.UserError` instead,
since it is not a run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from gpuscout.errors import GpuscoutError, UserError
from gpuscout.measure.protocol import Progress
from gpuscout.measure.user_spec import ModelSpec, parse_function_spec, parse_model_spec
from gpuscout.records import BenchConfig, RunResult
from gpuscout.scale import distribute
from gpuscout.workloads import Workload, get_workload

INTERRUPTED = "interrupted (Ctrl-C or a termination signal) before the end"


def check(config: BenchConfig) -> tuple[Workload | None, ModelSpec | None]:
    """Everything about ``config`` that can be checked without TensorFlow; UserError if bad."""
    model_spec = parse_model_spec(config.model) if config.model else None
    workload = None if model_spec else get_workload(config.workload)
    if config.data:
        if model_spec is None:
            raise UserError("--data needs --model.", "pass --model FILE.py:FUNCTION with it.")
        parse_function_spec(config.data, "--data")
    if workload is not None:
        workload.resolve(config.dims)  # unknown or bad size settings fail here
    _check_mode(config)
    layout = distribute.plan(config)
    if layout.workers:
        distribute.check_port_free(layout.workers[layout.task_index])
    if layout.local_replicas:
        distribute.batches(config, layout.local_replicas, 1)  # an uneven global batch
    return workload, model_spec


def _check_mode(config: BenchConfig) -> None:
    """Options that belong to one mode only are refused in the other, naming them."""
    if config.mode == "train":
        given = [flag for flag, value in (
            ("--batch-sizes", config.batch_sizes), ("--concurrency", config.concurrency),
            ("--slo-ms", config.slo_ms), ("--rate", config.rate),
            ("--serving", config.serving != "function"),
        ) if value]  # fmt: skip
        if given:
            raise UserError(
                f"{', '.join(given)} measure serving latency, not training.",
                "add --mode inference (training takes --batch-size).",
            )
        return
    given = [flag for flag, value in (
        ("--batch-size", config.batch_size), ("--steps", config.steps),
        ("--warmup-steps", config.warmup_steps), ("--data", config.data),
        ("--devices", config.devices), ("--workers", config.workers),
        ("--global-batch-size", config.global_batch_size), ("--loop fit", config.loop == "fit"),
    ) if value]  # fmt: skip
    if given:
        raise UserError(
            f"--mode inference does not take {', '.join(given)}.",
            "inference uses --batch-sizes, --concurrency and --seconds, on one device.",
        )
    if config.batch_sizes is not None and not config.batch_sizes:
        raise UserError("--batch-sizes is empty.", "give at least one, e.g. --batch-sizes 1,8,32.")


def bench(
    config: BenchConfig,
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    monitor: bool = True,
) -> RunResult:
    """Measure the training speed described by ``config`` on a local device.

    ``monitor``: sample the devices in a background thread of this process (the child-process
    runner turns it off and monitors from the parent instead).
    """
    workload, model_spec = check(config)
    from gpuscout.measure.monitor import attach, start_monitor

    watcher = start_monitor(None, config.device) if monitor else None
    return attach(_bench(config, workload, model_spec, on_progress, on_phase), watcher)


def _bench(
    config: BenchConfig,
    workload: Workload | None,
    model_spec: ModelSpec | None,
    on_progress: Callable[[Progress], None] | None,
    on_phase: Callable[[str], None] | None,
) -> RunResult:
    from gpuscout.measure.backends.tensorflow import backend as backend_tf

    try:
        return backend_tf.run(config, workload, model_spec, on_progress, on_phase or _ignore)
    except (UserError, GpuscoutError):
        raise
    except KeyboardInterrupt:
        return failed(config, "error", INTERRUPTED)
    except Exception as exc:  # any failure inside a measurement is stored, not lost
        if is_oom(exc):
            batch = config.batch_size
            hint = f" Try --batch-size {max(1, batch // 2)}." if batch and batch > 1 else ""
            return failed(config, "oom", f"out of memory: {_first_line(exc)}.{hint}")
        return failed(config, "error", f"{type(exc).__name__}: {_first_line(exc)}")


def failed(config: BenchConfig, status: str, message: str) -> RunResult:
    """A result for a run that did not finish."""
    return RunResult.model_validate(
        {
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "status": status,
            "message": message,
            "workload": config.model or config.workload,
            "device": config.device
            or (f"{len(config.workers)} workers" if config.workers else None)
            or config.devices
            or "default",
            "precision": config.precision,
            "xla": config.xla,
            "loop": config.loop,
            "batch_size": config.batch_size or 0,
            "config": config,
            "mode": config.mode,
        }
    )


def is_oom(exc: BaseException) -> bool:
    name = type(exc).__name__
    text = str(exc)
    return (
        name == "ResourceExhaustedError"
        or "OOM when allocating" in text
        or "out of memory" in text.lower()
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _ignore(_: str) -> None:
    return None
