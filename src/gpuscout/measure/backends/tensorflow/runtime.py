"""TensorFlow set-up shared by the measuring code: import, devices, precision, memory, peaks.

Like every module of ``measure/backends/tensorflow``, it may import TensorFlow; nothing outside
``measure/backends/`` may.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from gpuscout.core.errors import GpuscoutError, UserError
from gpuscout.measure import environment, peaks


def import_tensorflow() -> ModuleType:
    """Import TensorFlow with its start-up chatter hidden (replayed if the import fails)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        with tempfile.TemporaryFile() as sink, _stderr_to(sink):
            try:
                import tensorflow as tf
            except ImportError:
                sink.seek(0)
                os.write(2, sink.read())
                raise
    except ImportError as exc:
        raise GpuscoutError(
            "TensorFlow is not installed; measuring needs it. To fix: pip install "
            "'gpuscout[cpu]' (no NVIDIA GPU) or 'gpuscout[cuda]' (NVIDIA GPU)."
        ) from exc
    enable_memory_growth(tf)
    return tf  # type: ignore[no-any-return]


MEMORY_GROWTH_NOTE = (
    "GPU memory growth on (tf.config.experimental.set_memory_growth, as article 000 "
    "does): TensorFlow takes GPU memory as it needs it instead of nearly all of it at "
    "start, so the memory figures are what the run used"
)


def enable_memory_growth(tf: Any) -> bool:
    """Turn on memory growth for every GPU; False if TensorFlow already set the GPUs up (in a
    user's program that used them first), where it can no longer be changed."""
    done = True
    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except (RuntimeError, ValueError):
            done = False
    return done


@contextlib.contextmanager
def _stderr_to(sink: Any) -> Any:
    saved = os.dup(2)
    try:
        os.dup2(sink.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass(frozen=True)
class Device:
    """A resolved TensorFlow device."""

    name: str  # "CPU:0", "GPU:1"
    kind: str  # "CPU" | "GPU"
    description: str  # e.g. "NVIDIA A100-SXM4-40GB" or the CPU model
    compute_capability: tuple[int, int] | None

    @property
    def tf_name(self) -> str:
        return f"/{self.name}"


def resolve_device(tf: Any, requested: str | None) -> Device:
    """The device to run on: the one asked for, else the first GPU, else CPU:0."""
    logical = [d.name.split("device:")[-1] for d in tf.config.list_logical_devices()]
    if requested is None:
        gpus = [d for d in logical if d.startswith("GPU:")]
        requested = gpus[0] if gpus else "CPU:0"
    wanted = requested.upper().removeprefix("/DEVICE:").removeprefix("/")
    if wanted not in logical:
        raise UserError(
            f"unknown device '{requested}'; this machine has: {', '.join(logical)}.",
            "pass --device with one of those names (e.g. --device CPU:0).",
        )
    kind, index = wanted.split(":")
    if kind == "GPU":
        gpu = tf.config.list_physical_devices("GPU")[int(index)]
        details = tf.config.experimental.get_device_details(gpu)
        return Device(
            wanted, kind, str(details.get("device_name", "GPU")), details.get("compute_capability")
        )
    return Device(wanted, kind, environment.cpu_model(), None)


def precision_warning(device: Device, precision: str) -> str | None:
    """A warning when a precision runs emulated (slower, not faster) on this device."""
    if precision == "fp32":
        return None
    if device.kind == "CPU":
        if precision == "mixed_float16":
            return (
                "mixed_float16 on a CPU is emulated (no float16 arithmetic units): expect it "
                "to be slower than fp32."
            )
        if not environment.cpu_has_native_bf16():
            return (
                "mixed_bfloat16 on this CPU is emulated (no AVX512-BF16/AMX): expect it to be "
                "slower than fp32."
            )
        return None
    cc = device.compute_capability or (0, 0)
    if precision == "mixed_float16" and cc < (7, 0):
        return f"mixed_float16 on compute capability {cc} has no tensor cores: emulated speed."
    if precision == "mixed_bfloat16" and cc < (8, 0):
        return f"mixed_bfloat16 needs compute capability 8.0+ (this GPU is {cc}): emulated."
    return None


def tf32_in_effect(tf: Any, device: Device) -> bool:
    cc = device.compute_capability or (0, 0)
    return bool(
        device.kind == "GPU"
        and cc >= (8, 0)
        and tf.config.experimental.tensor_float_32_execution_enabled()
    )


def set_tf32(tf: Any, enabled: bool) -> bool:
    """Turn TensorFlow's TF32 switch on or off for this process; returns what it was, so an
    in-process caller (``gpuscout.bench``) can put it back. Set before the model is built: XLA
    reads it when it compiles."""
    previous = bool(tf.config.experimental.tensor_float_32_execution_enabled())
    tf.config.experimental.enable_tensor_float_32_execution(enabled)
    return previous


def tf32_environment(tf: Any, device: Device) -> dict[str, object]:
    """The run's env keys for TF32: ``tf32_enabled``, TensorFlow's switch read back from it
    (not the flag asked for, so a switch that did not take shows), and ``tf32``, whether it was
    in effect: on, on a GPU with TF32 tensor cores (the key's meaning since the first run)."""
    return {
        "tf32": tf32_in_effect(tf, device),
        "tf32_enabled": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
    }


def sync(tf: Any, device: Device) -> None:
    """Wait until the device has finished all queued work."""
    if device.kind == "GPU":
        tf.test.experimental.sync_devices()


def reset_peak_memory(tf: Any, device: Device) -> None:
    if device.kind == "GPU":
        tf.config.experimental.reset_memory_stats(device.name)


def peak_memory(tf: Any, device: Device) -> tuple[int, str]:
    """Peak memory in bytes and how it was measured."""
    if device.kind == "GPU":
        info = tf.config.experimental.get_memory_info(device.name)
        return int(info["peak"]), "TensorFlow allocator peak on the GPU during the run"
    return environment.process_peak_memory()


def device_peak_flops(tf: Any, device: Device, precision: str) -> tuple[float | None, str]:
    """Peak FLOP/s for MFU and where it comes from."""
    if device.kind == "GPU":
        return peaks.gpu_peak(device.description, precision, tf32_in_effect(tf, device))
    return peaks.cpu_peak(
        f"tf{tf.__version__}", precision, lambda: measure_cpu_matmul_peak(tf, device, precision)
    )


def measure_cpu_matmul_peak(tf: Any, device: Device, precision: str) -> float:
    """Best-of-N FLOP/s of a square matmul in the precision's compute dtype."""
    dtype = {"mixed_float16": tf.float16, "mixed_bfloat16": tf.bfloat16}.get(precision, tf.float32)
    n = peaks.cpu_matmul_size(precision)
    with tf.device(device.tf_name):
        a = tf.random.uniform((n, n), dtype=tf.float32)
        a = tf.cast(a, dtype)
        matmul = tf.function(lambda x: tf.matmul(x, x))
        return peaks.matmul_flops(n, lambda: matmul(a).numpy())


def tf_environment(tf: Any, device: Device) -> dict[str, object]:
    """Versions of TensorFlow, Keras, CUDA, cuDNN and the driver, where present."""
    import keras

    build = dict(tf.sysconfig.get_build_info())
    env: dict[str, object] = {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "cuda_build": bool(build.get("is_cuda_build")),
        "cuda": build.get("cuda_version"),
        "cudnn": build.get("cudnn_version"),
        "device": device.name,
        "device_name": device.description,
        "compute_capability": (
            ".".join(map(str, device.compute_capability)) if device.compute_capability else None
        ),
        "driver": _nvidia_driver() if device.kind == "GPU" else None,
    }
    return env


def _nvidia_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return str(pynvml.nvmlSystemGetDriverVersion())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # NVML missing or unusable: the driver is simply not recorded
        return None
