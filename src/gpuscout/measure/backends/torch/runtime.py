"""What the PyTorch backend needs of the machine: the device, its peak, memory and versions.

Kept apart from the step and the loop, as the JAX backend's ``runtime.py`` is: these are the
parts every later PyTorch job (doctor, soak, a ``torch.nn.Module``) will share.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.measure import environment, peaks
from gpuscout.measure.backends import TORCH_INSTALL_FIX

CPU_MEMORY = (
    "not measured: PyTorch reports no allocator peak on a CPU (torch.cuda.max_memory_allocated "
    "is CUDA's)"
)


@dataclass(frozen=True)
class Device:
    """A PyTorch device, named as the other backends name devices (CPU:0, GPU:1)."""

    name: str
    kind: str  # "CPU" | "GPU"
    description: str  # the GPU's name or the CPU model
    torch_name: str  # what torch and keras.device take: "cpu", "cuda:1"
    compute_capability: tuple[int, int] | None = None


def import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise UserError(
            "the PyTorch backend needs PyTorch, which is not installed.", TORCH_INSTALL_FIX
        ) from None
    return torch


def keras_on_torch() -> Any:
    """Keras, on PyTorch: chosen here if nothing imported Keras yet, refused (UserError) if
    Keras already runs on another backend in this process (Keras picks it once, on import)."""
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "torch"
    import keras

    if keras.backend.backend() != "torch":
        raise UserError(
            f"Keras in this process runs on {keras.backend.backend()}, not PyTorch: Keras picks "
            "its backend once, when it is first imported.",
            "run it through the gpuscout command (its processes start Keras on PyTorch), "
            "or set KERAS_BACKEND=torch before anything imports Keras.",
        )
    return keras


def all_devices(torch: Any) -> dict[str, Device]:
    """Every device of this process, by name: GPU:0, GPU:1, ... (CUDA), then CPU:0."""
    found: dict[str, Device] = {}
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            cc = tuple(torch.cuda.get_device_capability(i))
            found[f"GPU:{i}"] = Device(
                f"GPU:{i}", "GPU", torch.cuda.get_device_name(i), f"cuda:{i}", (cc[0], cc[1])
            )
    found["CPU:0"] = Device("CPU:0", "CPU", environment.cpu_model(), "cpu")
    return found


def resolve_device(torch: Any, requested: str | None) -> Device:
    """The device asked for (CPU:0, GPU:1), else the first GPU, else CPU:0."""
    return environment.pick_device(all_devices(torch), requested, "PyTorch")


def synchronize(torch: Any, device: Device) -> None:
    """Wait for the device's queued work: CUDA kernels run asynchronously; a CPU's ops have
    finished when they return."""
    if device.kind == "GPU":
        torch.cuda.synchronize(device.torch_name)


def set_tf32(torch: Any, enabled: bool) -> tuple[str, bool]:
    """TF32 for float32 matmuls and convolutions on Ampere and newer (``--tf32``, on by
    default as on the other backends; PyTorch's own default keeps matmuls in float32).
    Returns the settings before, for :func:`restore_tf32`."""
    before = (torch.get_float32_matmul_precision(), bool(torch.backends.cudnn.allow_tf32))
    torch.set_float32_matmul_precision("high" if enabled else "highest")
    torch.backends.cudnn.allow_tf32 = enabled
    return before


def restore_tf32(torch: Any, before: tuple[str, bool]) -> None:
    torch.set_float32_matmul_precision(before[0])
    torch.backends.cudnn.allow_tf32 = before[1]


def tf32_enabled(torch: Any) -> bool:
    return torch.get_float32_matmul_precision() != "highest"  # type: ignore[no-any-return]


def reset_peak_memory(torch: Any, device: Device) -> None:
    if device.kind == "GPU":
        torch.cuda.reset_peak_memory_stats(device.torch_name)


def peak_memory(torch: Any, device: Device) -> tuple[int | None, str]:
    """The CUDA caching allocator's peak since the model was built; not measured on a CPU."""
    if device.kind == "GPU":
        return (
            int(torch.cuda.max_memory_allocated(device.torch_name)),
            "PyTorch CUDA allocator peak (torch.cuda.max_memory_allocated)",
        )
    return None, CPU_MEMORY


COMPUTE_DTYPES = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


def device_peak_flops(torch: Any, device: Device, precision: str) -> tuple[float | None, str]:
    """Peak FLOP/s for MFU: the catalog's for a GPU, a measured torch matmul's for a CPU."""
    if device.kind == "GPU":
        return peaks.gpu_peak(device.description, precision, tf32_enabled(torch))
    return peaks.cpu_peak(
        f"torch{torch.__version__}", precision, lambda: _cpu_matmul_peak(torch, precision)
    )


def _cpu_matmul_peak(torch: Any, precision: str) -> float:
    """Best-of-5 FLOP/s of a square matmul in the precision's compute dtype."""
    dtype = getattr(torch, COMPUTE_DTYPES.get(precision, "float32"))
    n = peaks.cpu_matmul_size(precision)
    a = torch.ones((n, n), dtype=dtype)
    with torch.no_grad():
        return peaks.matmul_flops(n, lambda: a @ a)


def torch_environment(torch: Any, device: Device, with_keras: bool = True) -> dict[str, object]:
    """Versions of PyTorch, its CUDA and cuDNN (None on a CPU build), Keras (``with_keras``:
    a plain ``torch.nn.Module`` runs without it, and Keras is not imported for it), and the
    device."""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    env: dict[str, object] = {"torch": torch.__version__}
    if with_keras:
        import keras

        env |= {"keras": keras.__version__, "keras_backend": keras.backend.backend()}
    env |= {
        "device": device.name,
        "device_name": device.description,
        "cuda": torch.version.cuda,
        "cudnn": str(cudnn) if cudnn else None,
    }
    if device.compute_capability:
        env["compute_capability"] = ".".join(map(str, device.compute_capability))
    return env
