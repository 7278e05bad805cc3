"""Single-GPU step time from a cost profile and the catalog: a roofline per op class.

    time = sum over op classes of max(FLOPs / (peak x e_compute), bytes / (bandwidth x e_memory))

Matmuls run at the precision's peak (``catalog.peak_tflops``: FP32 on CUDA cores, TF32 on
Ampere+ as TensorFlow does by default, FP16/BF16 tensor cores with FP32 accumulate, FP32 where a
GPU lacks the type). Elementwise work and reductions run on the CUDA cores. The efficiencies are
not guessed: ``calibrate.py`` fits them to published measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.catalog import Gpu, peak_tflops
from gpuscout.predict.hlo import CLASSES
from gpuscout.predict.profile import Profile


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the datasheet peaks a training step reaches (fitted, see calibrate.py)."""

    tensor: float  # of the tensor-core peak, by matmuls on tensor cores (TF32/FP16/BF16)
    cuda: float  # of the FP32 CUDA-core peak, by matmuls and elementwise math without them
    memory: float  # of the memory bandwidth

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.tensor, self.cuda, self.memory)


@dataclass(frozen=True)
class StepEstimate:
    seconds: float
    matmul_rate: str  # which peak the matmuls were given, e.g. "TF32 tensor, dense ..."
    bound: dict[str, str]  # op class -> "compute" or "memory"


def on_tensor_cores(rate: str) -> bool:
    return not rate.startswith("FP32")


def step_time(profile: Profile, gpu: Gpu, eff: Efficiency, tf32: bool = True) -> StepEstimate:
    """Seconds per training step of ``profile`` on ``gpu``."""
    peak, rate = peak_tflops(gpu, profile.precision, tf32)
    matmul = peak * 1e12 * (eff.tensor if on_tensor_cores(rate) else eff.cuda)
    vector = gpu.fp32_tflops * 1e12 * eff.cuda
    bandwidth = gpu.memory_bandwidth_gb_per_s * 1e9 * eff.memory
    total, bound = 0.0, {}
    for cls in CLASSES:
        compute = profile.flops.get(cls, 0.0) / (matmul if cls == "matmul" else vector)
        memory = profile.bytes.get(cls, 0.0) / bandwidth
        total += max(compute, memory)
        bound[cls] = "compute" if compute >= memory else "memory"
    return StepEstimate(total, rate, bound)


def samples_per_second(profile: Profile, gpu: Gpu, eff: Efficiency, tf32: bool = True) -> float:
    return profile.batch / step_time(profile, gpu, eff, tf32).seconds
