"""What the JAX backend needs of the machine: the device, its peak, memory and versions."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.measure import environment, peaks
from gpuscout.measure.backends import JAX_INSTALL_FIX as INSTALL_FIX
from gpuscout.measure.backends.keras.seeding import seed_keras as seed_keras  # its callers


@dataclass(frozen=True)
class Device:
    """A JAX device, named as the TensorFlow backend names devices (CPU:0, GPU:1)."""

    name: str
    kind: str  # "CPU" | "GPU"
    description: str  # the GPU's name (its device_kind) or the CPU model
    handle: Any  # the jax.Device
    compute_capability: tuple[int, int] | None = None  # a CUDA GPU's, e.g. (9, 0)


def import_jax() -> Any:
    try:
        import jax
    except ImportError:
        raise UserError("the JAX backend needs JAX, which is not installed.", INSTALL_FIX) from None
    return jax


NOT_ON_JAX_KERAS = (
    "Keras in this process runs on {backend}, not JAX: Keras picks its backend once, when it is "
    "first imported."
)


def keras_on_jax() -> Any:
    """Keras, on JAX: chosen here if nothing imported Keras yet, refused (UserError) if Keras
    already runs on another backend in this process."""
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "jax"
    import keras

    if keras.backend.backend() != "jax":
        raise UserError(
            NOT_ON_JAX_KERAS.format(backend=keras.backend.backend()),
            "run it through the gpuscout command (its processes start Keras on JAX), "
            "or set KERAS_BACKEND=jax before anything imports Keras.",
        )
    return keras


def all_devices(jax: Any) -> dict[str, Device]:
    """Every device of this process, by name: GPU:0, GPU:1, ..., then CPU:0, CPU:1, ...
    (its own only: over workers, jax.devices() lists every process's, and this process can
    place nothing on another's)."""
    found: dict[str, Device] = {}
    for kind, platform in (("GPU", "gpu"), ("CPU", "cpu")):
        try:
            devices = jax.local_devices(backend=platform)
        except RuntimeError:  # no such platform here
            continue
        for i, d in enumerate(devices):
            desc = environment.cpu_model() if kind == "CPU" else str(d.device_kind)
            cc = _compute_capability(d) if kind == "GPU" else None
            found[f"{kind}:{i}"] = Device(f"{kind}:{i}", kind, desc, d, cc)
    return found


def resolve_device(jax: Any, requested: str | None) -> Device:
    """The device asked for (CPU:0, GPU:1), else the first GPU, else CPU:0."""
    return environment.pick_device(all_devices(jax), requested, "JAX")


def _compute_capability(device: Any) -> tuple[int, int] | None:
    """A CUDA device's compute capability ("9.0" on jaxlib's GPU devices), or None."""
    text = str(getattr(device, "compute_capability", "") or "")
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None


def peak_memory(device: Device, *others: Device) -> tuple[int, str]:
    """The allocator's peak on a GPU (the largest of several GPUs' peaks: each holds a replica);
    the process's peak resident memory on a CPU."""
    if device.kind == "GPU":
        stats = [d.handle.memory_stats() or {} for d in (device, *others)]
        peaks_in_use = [int(s["peak_bytes_in_use"]) for s in stats if "peak_bytes_in_use" in s]
        if peaks_in_use:
            of = f", the largest of {len(peaks_in_use)} GPUs" if len(peaks_in_use) > 1 else ""
            return max(peaks_in_use), f"JAX allocator peak on the GPU (memory_stats){of}"
    return environment.process_peak_memory()


def device_peak_flops(jax: Any, device: Device, precision: str) -> tuple[float | None, str]:
    """Peak FLOP/s for MFU: the catalog's for a GPU, a measured matmul's for a CPU."""
    if device.kind == "GPU":
        return peaks.gpu_peak(device.description, precision, tf32_enabled(jax))
    return peaks.cpu_peak(
        f"jax{jax.__version__}", precision, lambda: _cpu_matmul_peak(jax, device, precision)
    )


def _cpu_matmul_peak(jax: Any, device: Device, precision: str) -> float:
    """Best-of-5 FLOP/s of a square matmul in the precision's compute dtype."""
    import jax.numpy as jnp

    dtype = {"mixed_float16": jnp.float16, "mixed_bfloat16": jnp.bfloat16}.get(
        precision, jnp.float32
    )
    n = peaks.cpu_matmul_size(precision)
    a = jax.device_put(jnp.ones((n, n), dtype=dtype), device.handle)
    matmul = jax.jit(lambda x: x @ x)
    return peaks.matmul_flops(n, lambda: matmul(a).block_until_ready())


def set_tf32(jax: Any, enabled: bool) -> str | None:
    """TF32 for float32 matmuls on Ampere and newer: JAX's default precision lets XLA use it;
    ``highest`` keeps float32 on CUDA cores (as ``--no-tf32``). Returns the setting before."""
    before = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", None if enabled else "highest")
    return before  # type: ignore[no-any-return]


def tf32_enabled(jax: Any) -> bool:
    return jax.config.jax_default_matmul_precision not in ("highest", "float32")


def jax_environment(jax: Any, device: Device) -> dict[str, object]:
    """Versions of JAX, jaxlib and Keras, and the device."""
    import jaxlib
    import keras

    return {
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", None),
        "keras": keras.__version__,
        "keras_backend": keras.backend.backend(),
        "device": device.name,
        "device_name": device.description,
        "jax_platform": device.handle.platform,
    }
