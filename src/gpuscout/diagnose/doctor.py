"""``doctor``: where a training loop's time goes, and what each fix is measured to gain.

:func:`diagnose` is the public entry. It checks the request without any framework, then
runs the trials in a measuring child (``diagnose/ablations.py`` over the backend's target:
``measure/backends/<name>/doctor.py``: TensorFlow's, JAX's or PyTorch's), so that an
out-of-memory crash during the batch search cannot take the command down, while the parent's
device monitor watches; the monitor's windows give the device-busy fraction of the training
loop and the CPU's busiest core while only the data pipeline ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuscout.core.errors import GpuscoutError, UserError, did_you_mean
from gpuscout.diagnose.fixes import FIX_SETS
from gpuscout.diagnose.records import DoctorConfig, DoctorReport
from gpuscout.measure.runner import STALL_S, run_child
from gpuscout.measure.user_spec import (
    is_torch_module_file,
    parse_function_spec,
    parse_model_spec,
)
from gpuscout.workloads import get_workload

WINDOW_LABELS = {"data": "the data pipeline alone", "together": "the baseline training loop"}


def check(config: DoctorConfig) -> None:
    """Everything checkable without a framework; UserError if bad."""
    if config.model:
        spec = parse_model_spec(config.model)
        if is_torch_module_file(spec):
            raise UserError(
                f"doctor --model {config.model} is a plain PyTorch model (its file imports "
                "torch, not Keras): doctor diagnoses a Keras model's step and input pipeline "
                "so far.",
                "give doctor a keras.Model (it runs on --backend torch too); bench and soak "
                "measure a torch.nn.Module.",
            )
    else:
        get_workload(config.workload).resolve(config.dims)
    if config.data:
        if not config.model:
            raise UserError("--data needs --model.", "pass --model FILE.py:FUNCTION with it.")
        parse_function_spec(config.data, "--data")
    names = FIX_SETS[config.backend].names
    for name in config.skip:
        if name not in names:
            on = f" on {config.backend}" if config.backend != "tensorflow" else ""
            raise UserError(
                f"--skip '{name}' is not a fix doctor tries{on}.{did_you_mean(name, names)}",
                f"use one of: {', '.join(names)}.",
            )
    if config.backend == "jax":
        from gpuscout.measure.backends import require_jax

        require_jax("doctor --backend jax")
    if config.backend == "torch":
        _check_torch(config)


def _check_torch(config: DoctorConfig) -> None:
    """What doctor on PyTorch cannot take, refused by name before a child starts."""
    from gpuscout.measure.backends import require_torch

    if config.xla:
        raise UserError(
            "doctor --backend torch does not take --xla: XLA is not PyTorch's compiler.",
            "drop --xla, or use --backend tensorflow.",
        )
    require_torch("doctor --backend torch")


def diagnose(
    config: DoctorConfig,
    on_phase: Callable[[str], None] | None = None,
    stall_s: float = STALL_S,
) -> DoctorReport:
    """Run the diagnosis in a monitored child process and return its report."""
    check(config)

    def relay(message: dict[str, Any]) -> None:
        if "phase" in message and on_phase:
            on_phase(message["phase"])

    run = run_child("doctor", config.model_dump(mode="json"), config.device, relay, stall_s)
    if run.monitor is not None:
        run.monitor.stop()
    final = run.final
    if "user_error" in final:
        raise UserError(final["user_error"], final.get("fix"))
    if "error" in final or "report" not in final:
        raise GpuscoutError(f"doctor could not finish: {final.get('error') or run.failure}")
    report = DoctorReport.model_validate(final["report"])
    if run.monitor is None:
        return report
    together = run.windows.get(WINDOW_LABELS["together"])
    data = run.windows.get(WINDOW_LABELS["data"])
    gpu_busy = together.gpus[0].utilization_mean if together and together.gpus else None
    analysis = report.analysis.model_copy(
        update={
            "device_busy_fraction": gpu_busy,
            "busiest_core_data": data.cpu_busiest_core_mean if data else None,
        }
    )
    return report.model_copy(update={"analysis": analysis, "monitor": run.monitor.summary()})
