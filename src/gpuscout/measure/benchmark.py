"""``bench``: the public entry of the measuring stage.

Checks the settings without TensorFlow (so a typo fails fast), then runs the TensorFlow backend
in this process. Every failure that happens *during* a measurement (out of memory, an error in
the user's model's steps, Ctrl-C) comes back as a result with ``status`` oom or error, so the
caller can store it: failures are data. Bad input raises :class:`~gpuscout.core.errors.UserError`
instead, since it is not a run; so does a user's model that fails while being built or
inspected, before the first step (out of memory aside, which is stored as an oom run).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime

from gpuscout.core.errors import GpuscoutError, UserError, is_oom
from gpuscout.core.limits import check_fits_host, host_is_the_device
from gpuscout.core.records import BenchConfig, RunResult
from gpuscout.measure.job import Job
from gpuscout.measure.pipelines import check_demo_batch
from gpuscout.measure.protocol import Progress
from gpuscout.measure.user_spec import (
    ModelSpec,
    backend_for_model,
    is_torch_module_file,
    parse_function_spec,
    parse_model_spec,
)
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
    dims = workload.resolve(config.dims) if workload is not None else {}  # bad sizes fail here
    _check_mode(config)
    _check_backend(config)
    _check_torch_module(config, model_spec)
    if workload is not None and host_is_the_device(config.device):
        import psutil

        check_fits_host(workload.name, dims, config.precision, psutil.virtual_memory().available,
                        "measure it on a GPU that holds it, or try the step on --workload "
                        "llama-tiny here.")  # fmt: skip
    layout = distribute.plan(config)
    if layout.workers:
        distribute.check_port_free(layout.workers[layout.task_index])
    if layout.local_replicas:
        distribute.batches(config, layout.local_replicas, 1)  # an uneven global batch
    if workload is not None and (config.batch_size or config.global_batch_size):
        _, whole = distribute.batches(config, layout.local_replicas or 1, config.batch_size or 1)
        check_demo_batch(workload, dims, whole)
    return workload, model_spec


def _check_backend(config: BenchConfig) -> None:
    """What the JAX or PyTorch backend cannot do (yet) is refused by name, with the reason; a
    framework that is not installed is one line with the fix, found without importing it."""
    if config.backend == "torch":
        _check_torch(config)
        return
    if config.backend != "jax":
        return
    from gpuscout.measure.backends import require_jax

    reasons = [  # --workers runs: jax.distributed (measure/backends/jax/workers.py)
        (config.serving != "function", f"--serving {config.serving}",
         "a SavedModel is TensorFlow's serving format; JAX serves the jitted forward pass"),
    ]  # fmt: skip
    for bad, flag, why in reasons:
        if bad:
            raise UserError(
                f"--backend jax does not take {flag}: {why}.",
                f"drop {flag.split('/')[0].split(' ')[0]}, or use --backend tensorflow.",
            )
    require_jax()


def _check_torch(config: BenchConfig) -> None:
    """The PyTorch backend measures training eagerly, on synthetic batches, on one device or
    over workers with DDP (issue 44): anything else is refused here, by name, before a child
    starts."""
    from gpuscout.measure.backends import require_torch

    given = [(flag, why) for flag, why, value in (
        ("--mode inference", "serving is not measured on PyTorch yet", config.mode != "train"),
        ("--xla", "XLA is not PyTorch's compiler; --compile is, for a plain PyTorch --model",
         config.xla),
        ("--devices", "DDP runs one process per device, and --devices is one process; "
         "start one per device with --cluster (srun, SkyPilot, TF_CONFIG) or --workers",
         config.devices),
        ("--global-batch-size", "it splits a batch over workers, and this run has one",
         config.global_batch_size and not config.workers),
        ("--data", "your own data is not fed to PyTorch yet; it trains on synthetic batches",
         config.data),
    ) if value]  # fmt: skip
    if given:
        flag, why = given[0]
        raise UserError(
            f"--backend torch does not take {flag}: {why}.",
            f"drop {flag.split('/')[0].split(' ')[0]}, or use --backend tensorflow or jax.",
        )
    if config.workers and config.model and is_torch_module_file(parse_model_spec(config.model)):
        raise UserError(
            f"--backend torch over workers does not take --model {config.model} yet: DDP runs "
            "are measured on Keras models (a built-in --workload, or your keras.Model), and "
            "a plain torch.nn.Module's step is not wired into DDP.",
            "measure your module on one device (drop --cluster/--workers), or a Keras model "
            "over workers.",
        )
    if not config.model and get_workload(config.workload).has_pipeline:
        raise UserError(
            f"--backend torch does not take --workload {config.workload} yet: its host input "
            "pipeline is not built for PyTorch.",
            "pick another --workload, or use --backend tensorflow or jax.",
        )
    require_torch()


def _check_torch_module(config: BenchConfig, spec: ModelSpec | None) -> None:
    """A plain PyTorch ``--model`` (a ``torch.nn.Module``) runs on the PyTorch backend only,
    without Keras' ``model.fit``; ``--compile`` and ``--channels-last`` act on such a model
    only. Each refused by name where it cannot apply, before a child starts."""
    plain = spec is not None and is_torch_module_file(spec)
    if plain and config.backend != "torch":  # the command line resolves it; a library call
        backend_for_model(config.backend, True, spec)  # is refused as a typed --backend is
    for flag, given in (("--compile", config.compile), ("--channels-last", config.channels_last)):
        if given and not plain:
            raise UserError(
                f"{flag} applies to a plain PyTorch --model (a torch.nn.Module) only, so far; "
                "a Keras model (a built-in workload or yours) runs as Keras builds it.",
                f"drop {flag}, or measure a torch.nn.Module (docs/torch.md).",
            )
    if plain and config.loop == "fit":
        raise UserError(
            "--loop fit is Keras' model.fit, which a plain PyTorch --model (a torch.nn.Module) "
            "does not have.",
            "drop --loop fit: gpuscout's own loop times the module's training step.",
        )


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
    if config.backend == "jax" and not config.xla:  # every JAX step is compiled by XLA
        config = config.model_copy(update={"xla": True})
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
    from gpuscout.measure.backends import get

    chosen = get(config.backend)
    try:
        return chosen.run(Job(config, workload, model_spec, on_progress, on_phase or _ignore))
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


# A failed run's device when it was not given: the run either stopped before TensorFlow chose
# one, or chose the default without reporting which (a child killed mid-run).
NOT_RESOLVED = "not resolved (stopped before the device was chosen)"
NOT_RECORDED = "default, not recorded (first GPU, else CPU:0)"
# The TensorFlow backend's default batch for a user's model (backend._default_batch)
MODEL_BATCH = {"GPU": 256, "CPU": 32}


def failed(config: BenchConfig, status: str, message: str, device_chosen: bool = True) -> RunResult:
    """A result for a run that did not finish, saying no more than is known.

    Its device and batch are those given, else the defaults as far as they are known without
    TensorFlow: ``device_chosen`` False says the run stopped before one was chosen. (Issue 17:
    an interrupted run showed as "device default, batch 0", neither of them true.)
    """
    return RunResult.model_validate(
        {
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "status": status,
            "message": message,
            "workload": config.model or config.workload,
            "device": config.device
            or (f"{len(config.workers)} workers" if config.workers else None)
            or config.devices
            or (NOT_RECORDED if device_chosen else NOT_RESOLVED),
            "precision": config.precision,
            "xla": config.xla,
            "loop": config.loop,
            "batch_size": config.batch_size or config.global_batch_size or _default_batch(config),
            "config": config,
            "mode": config.mode,
            "backend": config.backend,
        }
    )


def _default_batch(config: BenchConfig) -> int:
    """The batch the backend picks when none is given, where the device kind does not matter
    or is known (``--device``, or CUDA_VISIBLE_DEVICES hiding every GPU); else 0 (shown as
    not given). Inference runs serve several batch sizes: 0."""
    if config.mode != "train":
        return 0
    if config.model:
        by_kind = MODEL_BATCH
    else:
        try:
            workload = get_workload(config.workload)
        except UserError:
            return 0
        by_kind = {"GPU": workload.default_batch_gpu, "CPU": workload.default_batch_cpu}
    if len(set(by_kind.values())) == 1:
        return by_kind["GPU"]
    if config.device:
        kind = config.device.split(":")[0].strip().upper()
    elif os.environ.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1"):
        kind = "CPU"
    else:
        return 0
    return by_kind.get(kind, 0)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _ignore(_: str) -> None:
    return None
