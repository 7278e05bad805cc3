"""Single-GPU step time: the sum of the step's kernels, each bounded by the roofline.

    step = sum over kernels of count x (launch + smooth max(compute, memory)) + step cost

Each kernel's compute and memory times come from the kernel model (``kernel_model.py``), learned
from 155,764 measured CUDA kernels on five GPUs: how many waves of tiles the kernel makes on the
GPU's SMs (a small kernel leaves a big GPU idle), how close its size lets it get to the memory
bandwidth, whether its working set fits in L2, and a launch cost per kernel. So a GPU's speed
follows its SMs, clocks, cache and bandwidth *per kernel*, not one bandwidth ratio for every
workload.

What kernels cannot know is fitted to published end-to-end training rows (``calibrate.py``):
the share of the tensor-core peak GEMMs reach (the kernel data is FP32 only), how that share
falls as a GPU packs more tensor FLOPs into each SM clock, how far a GPU's board power lets its
clocks hold under compute load, and how much more (or less) DRAM traffic a software stack makes
than XLA's fusion (a factor on bytes, bounded near 1). The launch and per-step costs are assumed
(``data/overheads.csv``). Every kernel stays at or above its roofline: compute at most its
units' peak, bytes at most at the DRAM bandwidth.
Matmuls run at the precision's peak (``catalog.peak_tflops``: FP32 on CUDA cores, TF32 on Ampere+
unless ``tf32=False``, FP16/BF16 tensor cores with FP32 accumulate, FP32 where a GPU lacks the
type), or on CUDA cores where those are faster: see ``kernel_model.cuda_core_alternative``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from gpuscout.catalog import Gpu, peak_tflops
from gpuscout.predict.efficiency import Efficiency, hlo_op_share
from gpuscout.predict.kernel_model import (
    GpuFeatures,
    KernelModel,
    components,
    cuda_core_alternative,
)
from gpuscout.predict.kernel_model import load as load_kernel_model
from gpuscout.predict.kernels import Kernel, Op
from gpuscout.predict.profile import Profile

BOUNDS = ("compute", "memory", "launch")


@dataclass(frozen=True)
class StepEstimate:
    seconds: float
    matmul_rate: str  # which peak the matmuls were given, e.g. "TF32 tensor, dense ..."
    split: dict[str, float]  # seconds in compute-, memory- and launch-bound kernels; "step"
    launches: int  # kernels launched per step
    assumptions: list[str] = field(default_factory=list)
    # per kernel class (matmul, conv, elementwise, reduction): seconds, FLOPs, bytes moved and
    # the roofline floor (sum over its kernels of max(FLOPs / peak, bytes / DRAM bandwidth))
    classes: dict[str, dict[str, float]] = field(default_factory=dict)


def on_tensor_cores(rate: str) -> bool:
    return not rate.startswith("FP32")


_PRECISION_OF = {"f16": "mixed_float16", "bf16": "mixed_bfloat16"}


def kernel_peak(kernel: Kernel, gpu: Gpu, tf32: bool) -> tuple[float, int]:
    """FLOP/s of the units a kernel runs on, and which of TENSOR_KINDS it is, counted from 1
    (0: a GEMM or convolution on CUDA cores; -1: any other kernel)."""
    if not kernel.gemm:
        return gpu.fp32_tflops * 1e12, -1
    precision = _PRECISION_OF.get(kernel.dtype, "fp32")
    peak, rate = peak_tflops(gpu, precision, tf32)
    if not on_tensor_cores(rate):
        return peak * 1e12, 0
    return peak * 1e12, (1 if kernel.op == "matmul" else 3) + (precision != "fp32")


def kernels_of(profile: Profile) -> list[Kernel]:
    """The profile's kernels; for a profile without a kernel list (made by hand, or by an older
    gpuscout), one kernel per op class that fills the GPU, so it still has a time."""
    if profile.kernels:
        return list(profile.kernels)
    out = []
    ops: tuple[Op, ...] = ("matmul", "elementwise", "reduction")
    for op in ops:
        cls = op
        flops, moved = profile.flops.get(cls, 0.0), profile.bytes.get(cls, 0.0)
        if flops <= 0 and moved <= 0:
            continue
        dtype = "f32" if profile.precision == "fp32" else "f16"
        if op == "matmul":
            side = 8192
            k = max(1, round(flops / (2 * side * side)))
            out.append(Kernel(op="matmul", flops=flops, bytes=moved, dtype=dtype, m=side,
                              n=side, k=k))  # fmt: skip
        else:
            out.append(Kernel(op=op, flops=flops, bytes=moved, elements=max(1, int(moved / 8))))
    return out


@dataclass(frozen=True)
class Terms:
    """A step on one GPU, taken apart so the calibration can refit quickly: per distinct kernel,
    its count, memory time and compute time at the full peak of its units, and the FLOPs and
    bytes those come from (for the roofline floor and ``predict --breakdown --json``)."""

    count: np.ndarray
    overlap: np.ndarray  # p of the kernel model's smooth max (c^p + m^p)^(1/p)
    memory: np.ndarray
    compute: np.ndarray
    # int: 1 + its index in TENSOR_KINDS; 0: a GEMM on CUDA cores; -1: any other kernel
    tensor: np.ndarray
    rate: str
    assumptions: tuple[str, ...]
    rho: np.ndarray = field(default_factory=lambda: np.zeros(0))  # FLOPs per SM per clock
    sm_ghz_per_w: float = 0.0  # SMs x boost GHz per watt of board power (0: power unknown)
    op: tuple[str, ...] = ()  # per kernel: its class (kernels.OPS)
    flops: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per call
    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per call, as counted
    # FLOP/s of its units (of the faster, for a GEMM that may also run on CUDA cores)
    peak: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bandwidth: float = 0.0  # the GPU's DRAM bandwidth, B/s
    # per kernel: the most its share may be (1 / the kernel model's compute utilisation of its
    # op, less what its architecture's factor already took): compute never beats the peak
    cap: np.ndarray = field(default_factory=lambda: np.ones(0))
    # per kernel: compute seconds of the CUDA-core algorithm the autotuner also tries for a
    # tensor-core GEMM (``kernel_model.cuda_core_alternative``); inf where there is none to choose
    cuda: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cuda_notes: tuple[str, ...] = ()  # what that alternative assumes (its chip's factor)
    # per kernel: seconds of the transposes an NCHW stack adds around a tensor-core convolution
    # (each operand and the result read and written once more, streamed as an elementwise
    # kernel), paid where ``Efficiency.relayout`` is 1; and the bytes they move
    relayout: np.ndarray = field(default_factory=lambda: np.zeros(0))
    relayout_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def picked_compute(self, eff: Efficiency) -> np.ndarray:
        """Per kernel: compute seconds at full clocks on the units the library picks, the
        faster of the tensor-core algorithm (at its fitted share) and the CUDA-core one."""
        share = eff.share(np.maximum(self.tensor, 0), self.rho, self.cap)
        compute = np.where(self.tensor >= 0, self.compute / share, self.compute)
        return np.minimum(compute, self.cuda) if self.cuda.size else compute

    def on_cuda_cores(self, eff: Efficiency) -> np.ndarray:
        """Per kernel: whether a tensor-core-eligible GEMM is modelled on CUDA cores, because
        its CUDA-core algorithm is the faster."""
        if not self.cuda.size:
            return np.zeros(len(self.count), dtype=bool)
        share = eff.share(np.maximum(self.tensor, 0), self.rho, self.cap)
        return np.asarray((self.tensor > 0) & (self.cuda < self.compute / share), dtype=bool)

    def bodies(self, eff: Efficiency) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per kernel: its time without the launch, its compute and its memory time."""
        compute = self.picked_compute(eff) * eff.power_slowdown(self.sm_ghz_per_w)
        memory = self.memory * eff.traffic
        return combine(compute, memory, self.overlap), compute, memory

    def extra(self, eff: Efficiency) -> np.ndarray:
        """Per kernel: seconds of the stack's layout transposes (two launches and their bytes)."""
        if not eff.relayout or not self.relayout.size:
            return np.zeros(len(self.count))
        return np.asarray(
            eff.relayout * (self.relayout + np.where(self.relayout > 0, 2 * eff.launch_s, 0.0)),
            dtype=float,
        )

    def seconds(self, eff: Efficiency) -> float:
        body, _, _ = self.bodies(eff)
        kernels = self.count * (eff.launch_s + body + self.extra(eff))
        return float(kernels.sum() + eff.step_s)

    def split(self, eff: Efficiency) -> dict[str, float]:
        """Seconds of the step in kernels bound by compute, by memory, and by their launch
        (a kernel whose work takes less than its launch), and the framework's step cost."""
        body, compute, memory = self.bodies(eff)
        total = self.count * (eff.launch_s + body)
        launch = eff.launch_s > body
        on_compute = ~launch & (compute >= memory)
        extra = float((self.count * self.extra(eff)).sum())
        return {
            "compute": float(total[on_compute].sum()),
            "memory": float(total[~launch & ~on_compute].sum()) + extra,
            "launch": float(total[launch].sum()),
            "step": eff.step_s,
        }

    def classes(self, eff: Efficiency) -> dict[str, dict[str, float]]:
        """Per kernel class: seconds (launches included), FLOPs, bytes moved (the stack's
        traffic factor applied), the roofline floor and the FLOPs of its tensor-core-eligible
        kernels modelled on CUDA cores, per step: anyone can recompute the implied bandwidth
        (bytes / seconds) and check seconds >= floor."""
        body, _, _ = self.bodies(eff)
        body = body + self.extra(eff)
        cuda = self.on_cuda_cores(eff)
        moved = self.nbytes * eff.traffic
        if eff.relayout and self.relayout_bytes.size:
            moved = moved + eff.relayout * self.relayout_bytes
        floor = np.maximum(self.flops / np.maximum(self.peak, 1.0), moved / self.bandwidth)
        out: dict[str, dict[str, float]] = {}
        ops = np.array(self.op)
        for op in dict.fromkeys(self.op):
            at = ops == op
            n = self.count[at]
            out[op] = {
                "seconds": float((n * (eff.launch_s + body[at])).sum()),
                "flops": float((n * self.flops[at]).sum()),
                "bytes": float((n * moved[at]).sum()),
                "roofline_s": float((n * floor[at]).sum()),
                "kernels": float(n.sum()),
                "cuda_core_flops": float((n * self.flops[at] * cuda[at]).sum()),
            }
        return out


def combine(compute: np.ndarray, memory: np.ndarray, overlap: np.ndarray) -> np.ndarray:
    """The kernel model's smooth maximum of compute and memory time (``kernel_model.combine``
    without the launch, which the end-to-end fit owns): never below the larger of the two."""
    hi = np.maximum(compute, memory)
    lo = np.minimum(compute, memory)
    ratio = np.divide(lo, hi, out=np.zeros_like(hi), where=hi > 0)
    return np.asarray(hi * (1.0 + ratio**overlap) ** (1.0 / overlap), dtype=float)


def terms(profile: Profile, gpu: Gpu, tf32: bool = True, model: KernelModel | None = None) -> Terms:
    """The step of ``profile`` on ``gpu`` before the fitted factors are applied: every kernel
    timed by the kernel model at once, op by op (a step has thousands of kernels)."""
    model = model or load_kernel_model()
    features = GpuFeatures.from_gpu(gpu)
    kernels = kernels_of(profile)
    kinds: dict[tuple[str, str], tuple[float, int]] = {}
    for kernel in kernels:
        if (kernel.op, kernel.dtype) not in kinds:
            kinds[(kernel.op, kernel.dtype)] = kernel_peak(kernel, gpu, tf32)
    n = len(kernels)
    count, overlap = np.empty(n), np.empty(n)
    memory, compute, kind = np.empty(n), np.empty(n), np.zeros(n, dtype=int)
    rho, cap, cuda = np.zeros(n), np.ones(n), np.full(n, np.inf)
    relayout, relayout_bytes = np.zeros(n), np.zeros(n)
    sm_clocks = features.sm_count * features.clock_mhz * 1e6
    arch_notes: set[str] = set()
    cuda_notes: set[str] = set()
    ops: set[Op] = {k.op for k in kernels}
    for op in ops:
        at = np.array([k.op == op for k in kernels])
        mine = [k for k in kernels if k.op == op]
        p = model.params[op]
        peaks = np.array([kinds[(k.op, k.dtype)][0] for k in mine])
        size = {f: np.array([getattr(k, f) for k in mine], dtype=float)
                for f in ("flops", "bytes", "batch", "m", "n", "k", "elements")}  # fmt: skip
        # A traced step counts 1 FLOP per HLO op an element of its elementwise and reduction
        # kernels: one instruction each, at the CUDA cores' issue rate (``hlo_op_share``), not
        # the kernel data's share for transcendental-heavy PyTorch kernels (u_compute).
        issued = p if mine[0].gemm else replace(p, u_compute=hlo_op_share())
        c, m = components(
            issued, mine[0].gemm, size["flops"], size["bytes"], size["batch"], size["m"], size["n"],
            size["k"], size["elements"], features.sm_count, features.clock_mhz, peaks,
            features.bandwidth, features.l2_bytes,
        )  # fmt: skip
        mine_kind = np.array([kinds[(k.op, k.dtype)][1] for k in mine])
        cap[at] = 1.0 / p.u_compute
        if mine[0].gemm:
            # CUDA-core GEMMs at their architecture's measured speed, never above the peak
            factor, note = model.cuda_gemm_factor(gpu.chip or "", op)
            factor = min(factor, 1.0 / p.u_compute)
            noted = {note} if note and factor != 1.0 else set()
            if (mine_kind == 0).any():
                c = np.where(mine_kind == 0, c / factor, c)
                cap[at] = np.where(mine_kind == 0, 1.0, cap[at])
                arch_notes |= noted
            if (mine_kind > 0).any():
                alt = cuda_core_alternative(p, size, features, factor)
                cuda[at] = np.where(mine_kind > 0, alt, np.inf)
                cuda_notes |= noted
        if not mine[0].gemm:
            # streamed at the share its memory technology reaches, never above the DRAM peak
            m = m / min(model.memory_factor(gpu.memory_type or "", op), 1.0 / p.u_mem)
        if op == "conv":
            # an NCHW stack's transposes: every operand and the result read and written once
            # more, streamed like an elementwise kernel at this board's memory technology
            moved = np.where(mine_kind > 0, 2.0 * size["bytes"], 0.0)
            pe = model.params["elementwise"]
            _, t = components(
                pe, False, np.zeros_like(moved), moved, size["batch"], size["m"], size["n"],
                size["k"], np.maximum(moved / 4.0, 1.0), features.sm_count, features.clock_mhz,
                features.fp32_flops, features.bandwidth, features.l2_bytes,
            )  # fmt: skip
            t = t / min(model.memory_factor(gpu.memory_type or "", "elementwise"), 1.0 / pe.u_mem)
            relayout[at] = np.where(moved > 0, t, 0.0)
            relayout_bytes[at] = moved
        compute[at], memory[at] = c, m
        count[at] = [k.count for k in mine]
        overlap[at] = p.overlap
        kind[at] = mine_kind
        rho[at] = peaks / sm_clocks
    rate = peak_tflops(gpu, profile.precision, tf32)[1]
    unit_peaks = np.array([kinds[(k.op, k.dtype)][0] for k in kernels], dtype=float)
    assumed = list(features.assumptions) + sorted(arch_notes)
    sm_ghz_per_w = 0.0
    if gpu.tdp_w:
        sm_ghz_per_w = sm_clocks / 1e9 / gpu.tdp_w
    else:
        assumed.append(f"{gpu.id}: board power (tdp_w) unknown: clocks assumed to hold under load")
    return Terms(
        count, overlap, memory, compute, kind, rate, tuple(assumed), rho, sm_ghz_per_w,
        op=tuple(k.op for k in kernels),
        flops=np.array([k.flops for k in kernels], dtype=float),
        nbytes=np.array([k.bytes for k in kernels], dtype=float),
        peak=np.where(np.isfinite(cuda), np.maximum(unit_peaks, features.fp32_flops), unit_peaks),
        bandwidth=features.bandwidth,
        cap=cap,
        cuda=cuda,
        cuda_notes=tuple(sorted(cuda_notes)),
        relayout=relayout,
        relayout_bytes=relayout_bytes,
    )  # fmt: skip


def _on_cuda_cores(parts: Terms, eff: Efficiency, gpu: Gpu) -> list[str]:
    """What a prediction assumes when the autotuner's choice puts tensor-core-eligible GEMMs on
    CUDA cores (``kernel_model.cuda_core_alternative``): how many, and at what speed."""
    cuda = parts.on_cuda_cores(eff)
    if not cuda.any():
        return []
    eligible = parts.tensor > 0
    work = parts.count * parts.flops
    speed = "; ".join(parts.cuda_notes) or "the kernel model's measured FP32 utilisation"
    return [
        f"{gpu.id}: {int(parts.count[cuda].sum()):,} of {int(parts.count[eligible].sum()):,} "
        f"tensor-core-eligible matmul and convolution kernels a step "
        f"({work[cuda].sum() / work[eligible].sum():.0%} of their FLOPs) on CUDA cores: the "
        f"autotuner picks the faster algorithm, and the FP32 CUDA-core one ({speed}) beats the "
        "tensor-core one at the fitted share"
    ]


def step_time(profile: Profile, gpu: Gpu, eff: Efficiency, tf32: bool = True) -> StepEstimate:
    """Seconds per training step (or forward pass) of ``profile`` on ``gpu``. A forward pass
    pays a forward call's cost, not a training step's."""
    if profile.kind == "forward":
        eff = replace(eff, step_s=eff.forward_s)
    parts = terms(profile, gpu, tf32)
    assumptions = list(parts.assumptions)
    slow = eff.power_slowdown(parts.sm_ghz_per_w)
    if slow > 1.0 and gpu.tdp_w:
        assumptions.append(
            f"{gpu.id}: {gpu.tdp_w:g} W board power for {gpu.tdp_w * parts.sm_ghz_per_w:.0f} "
            f"SM-GHz (SMs x boost clock): compute kernels at x{1 / slow:.2f} of full clocks "
            f"(fitted: full clocks need {eff.power_w:.2f} W per SM-GHz)"
        )
    assumptions += _on_cuda_cores(parts, eff, gpu)
    return StepEstimate(
        parts.seconds(eff),
        parts.rate,
        parts.split(eff),
        int(parts.count.sum()),
        assumptions,
        parts.classes(eff),
    )


def samples_per_second(profile: Profile, gpu: Gpu, eff: Efficiency, tf32: bool = True) -> float:
    return profile.batch / step_time(profile, gpu, eff, tf32).seconds


def total_seconds(parts: Sequence[Terms], eff: Efficiency) -> list[float]:
    return [p.seconds(eff) for p in parts]


ESTIMATED = (
    "estimated from the step's split: its kernel launches and cost per step stay, the rest "
    "and the activations grow with the batch"
)


def grown_step(est: StepEstimate, grow: float) -> StepEstimate:
    """One GPU's step at ``grow`` x the batch it was counted at, estimated from its split
    (``ESTIMATED``); its per-class figures are left out (they were counted at the other
    batch)."""
    if grow == 1:
        return est
    split = est.split
    fixed = split.get("launch", 0.0) + split.get("step", 0.0)
    scaled = split.get("compute", 0.0) + split.get("memory", 0.0)
    grown = {k: v * grow if k in ("compute", "memory") else v for k, v in split.items()}
    return replace(est, seconds=fixed + scaled * grow, split=grown, classes={})
