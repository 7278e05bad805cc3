"""The parts of a run's environment fingerprint that need no TensorFlow.

Two runs are comparable only if they ran the same workload on the same software; so each run
records versions, the CPU, and a hash of the workload definition.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from gpuscout.core.errors import UserError


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo, falling back to platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_has_native_bf16() -> bool:
    """True where the CPU has bfloat16 arithmetic (AVX512-BF16 or AMX)."""
    return bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})


def base_environment() -> dict[str, object]:
    return {
        "gpuscout": package_version("gpuscout"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "executable": sys.executable,
    }


def hash_parts(*parts: bytes | str) -> str:
    """A short stable hash of a workload's definition (source, settings, file contents)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def process_peak_memory() -> tuple[int, str]:
    """This process's peak resident memory in bytes, and how it was measured (a CPU run)."""
    import resource

    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss_kib) * 1024, "peak resident memory of the whole process (CPU run)"


D = TypeVar("D")


def pick_device(found: Mapping[str, D], requested: str | None, framework: str) -> D:
    """The device asked for (CPU:0, GPU:1, /device:GPU:1), else the first GPU, else CPU:0,
    among what ``framework`` sees (``found``: name -> its device record): one rule for every
    backend that lists its devices itself (JAX, PyTorch)."""
    if requested is None:
        return found.get("GPU:0") or found["CPU:0"]
    wanted = requested.upper().removeprefix("/DEVICE:").removeprefix("/")
    if wanted not in found:
        raise UserError(
            f"unknown device '{requested}'; {framework} sees: {', '.join(found)}.",
            "pass --device with one of those names (e.g. --device CPU:0).",
        )
    return found[wanted]
