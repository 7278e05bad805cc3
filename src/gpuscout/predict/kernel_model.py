"""How long one kernel takes on one GPU: a roofline whose utilisations come from the kernel's
shape and the GPU's features, learned from measured kernels.

Why not a global efficiency constant: a kernel that makes 40 tiles of work leaves most of a
132-SM GPU idle, a 1 MB elementwise op cannot pull 3 TB/s, and a working set that fits in a 40 MB
L2 is not read from DRAM at all. Those effects are what makes a step *not* speed up with a
GPU's peak, and they depend on GPU features (SM count, clock, bandwidth, L2 size) that every GPU
has, so a model written in them transfers to GPUs it never saw.

The model, per call (``KernelModel.time``)::

    seconds = launch + smooth_max(compute, memory)      (>= max(compute, memory))
    compute = waves x tiles_per_sm x tile_flops / (per-SM peak x u_compute)
    memory  = bytes / min(bandwidth x u_mem x l2_boost, active SMs x bytes_per_clock x clock)

- GEMMs (matmul, convolution as implicit GEMM): tiles = batch x ceil(m/tile_m) x ceil(n/tile_n);
  when they are fewer than the GPU can run at once, the contraction is split (split-K, as cuBLAS
  does) into at most ceil(k / 256) parts; waves = ceil(tiles x splits / (SMs x tiles_per_sm)).
  A padded tile does the work of a full one, so compute >= FLOPs / peak / u_compute, and more SMs
  at the same per-SM rate never add a wave.
- Other kernels: the elements are spread over the SMs, ``ELEMENTS_PER_SM`` an SM a wave.
- Memory: ``u_mem`` <= 1 is the share of the DRAM bandwidth a streaming kernel reaches. A
  working set that fits in L2 is re-read from L2 by repeated calls: the bandwidth is multiplied by
  up to ``l2_gain`` (<= 4: the L2 of these GPUs delivers about 2-4x their DRAM bandwidth), fully
  up to half the L2 size, fading to none at the L2 size. This is the one case where the effective
  bandwidth may exceed the DRAM peak; from the L2 size on, time >= bytes / DRAM bandwidth. A
  small kernel also cannot keep enough loads in flight: each active SM moves at most
  ``bytes_per_clock`` (>= ``BYTES_PER_CLOCK_MIN``) a clock.
- ``launch``: a fixed cost per call. Fitted on NeuSight's data it is what one PyTorch eager call
  costs (dispatch, launch and the event timing: 30-90 us there), not a bare CUDA launch.

The fitted parameters ship in ``data/kernel_model.json``; ``scripts/fit_kernel_model.py``
regenerates them from ``data/kernels`` (see :mod:`gpuscout.predict.kernel_data`) with the fit in
:mod:`gpuscout.predict.kernel_fit`, the one place that uses SciPy; nothing here imports TensorFlow.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from gpuscout.predict.kernels import OPS, Kernel, Op

if TYPE_CHECKING:
    from gpuscout.catalog import Gpu
    from gpuscout.predict.kernel_data import KernelArrays

MODEL_PATH = Path(str(resources.files("gpuscout.predict") / "data" / "kernel_model.json"))

# L2 size assumed for a GPU whose catalog row gives none: 0.05 MB an SM, the smallest ratio among
# the measured GPUs (Tesla P4: 2 MB, 40 SMs), so an unknown L2 never makes a GPU look faster.
L2_MB_PER_SM_FALLBACK = 0.05
SPLIT_K_MIN = 256  # a split-K part contracts at least this many (cuBLAS-like heuristic)
ELEMENTS_PER_SM = 8192  # elements an SM takes a wave: 2,048 resident threads x 4 (vectorised)
L2_GAIN_MAX = 4.0
# An SM moves at least this many bytes a clock (its L1 path moves 64-128): with every SM busy the
# feed is above the DRAM bandwidth of every catalog GPU (B200 needs 26, H200 18, A100 10), so the
# feed limit only slows kernels that occupy few SMs, as Little's law says it should.
BYTES_PER_CLOCK_MIN = 32.0
# The chips of the kernel data's full-power boards, whose CUDA-core GEMM factor is measured.
CUDA_GEMM_CHIPS = {"GV100": "Volta", "GA100": "Ampere", "GP100": "Pascal"}
Array = npt.NDArray[np.float64]
Bound = Literal["compute", "memory", "launch"]


def _positive(name: str, value: float, zero_ok: bool = False) -> None:
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ValueError(
            f"{name} = {value!r} is not a usable GPU feature: it must be a finite number "
            f"{'>= 0' if zero_ok else '> 0'}; fix the GPU's catalog row"
        )


@dataclass(frozen=True)
class GpuFeatures:
    """What the kernel model needs of a GPU. Rates in SI units: FLOP/s, B/s, bytes."""

    sm_count: int
    clock_mhz: float
    fp32_flops: float  # FLOP/s on the CUDA cores
    bandwidth: float  # DRAM, B/s
    l2_bytes: float
    # What was assumed for a feature the catalog row lacks, to print beside the prediction.
    assumptions: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.sm_count, bool) or not isinstance(self.sm_count, int):
            raise ValueError(f"sm_count = {self.sm_count!r} must be a whole number of SMs")
        _positive("sm_count", float(self.sm_count))
        _positive("clock_mhz", self.clock_mhz)
        _positive("fp32_flops", self.fp32_flops)
        _positive("bandwidth", self.bandwidth)
        _positive("l2_bytes", self.l2_bytes, zero_ok=True)

    @classmethod
    def from_gpu(cls, gpu: Gpu) -> GpuFeatures:
        """The features of a catalog row; unknown ones are assumed and said so in
        ``assumptions``: the L2 size (``L2_MB_PER_SM_FALLBACK`` an SM) and the clock (from the
        FP32 rate and the CUDA cores, 2 FLOPs a core a clock)."""
        assumed: list[str] = []
        if not gpu.sm_count:
            raise ValueError(
                f"{gpu.id}: sm_count is unknown; the kernel model needs it (add it to the row)"
            )
        clock = gpu.boost_clock_mhz
        if not clock:
            if not gpu.cuda_cores:
                raise ValueError(
                    f"{gpu.id}: boost_clock_mhz and cuda_cores are both unknown; add either"
                )
            clock = gpu.fp32_tflops * 1e12 / (2 * gpu.cuda_cores) / 1e6
            assumed.append(
                f"{gpu.id}: boost clock assumed {clock:.0f} MHz (FP32 rate / 2 / CUDA cores)"
            )
        l2_mb = getattr(gpu, "l2_cache_mb", None)
        if l2_mb is None:
            l2_mb = L2_MB_PER_SM_FALLBACK * gpu.sm_count
            assumed.append(
                f"{gpu.id}: L2 size unknown, assumed {l2_mb:g} MB "
                f"({L2_MB_PER_SM_FALLBACK} MB an SM, the smallest share among measured GPUs)"
            )
        return cls(
            sm_count=int(gpu.sm_count),
            clock_mhz=float(clock),
            fp32_flops=gpu.fp32_tflops * 1e12,
            bandwidth=gpu.memory_bandwidth_gb_per_s * 1e9,
            l2_bytes=float(l2_mb) * 1e6,
            assumptions=tuple(assumed),
        )


@dataclass(frozen=True)
class KernelTime:
    """One call's time and its parts; ``bound`` names the largest part."""

    seconds: float
    compute_s: float
    memory_s: float
    launch_s: float
    bound: Bound


@dataclass(frozen=True)
class OpParams:
    """The fitted parameters of one op. Bounds are physics, checked on load."""

    u_compute: float  # share of the per-SM peak a full tile reaches, <= 1
    u_mem: float  # share of DRAM bandwidth a streaming kernel reaches, <= 1
    l2_gain: float  # bandwidth multiplier for a working set that fits in L2, in [1, 4]
    bytes_per_clock: float  # per active SM: small kernels cannot fill the memory system
    launch_s: float  # fixed cost of a call
    overlap: float  # p of the smooth max (c^p + m^p)^(1/p): large = no overlap penalty
    tile_m: int = 64
    tile_n: int = 64
    tiles_per_sm: int = 2

    def __post_init__(self) -> None:
        checks = {
            "u_compute": 0 < self.u_compute <= 1,
            "u_mem": 0 < self.u_mem <= 1,
            "l2_gain": 1 <= self.l2_gain <= L2_GAIN_MAX,
            "bytes_per_clock": BYTES_PER_CLOCK_MIN <= self.bytes_per_clock < math.inf,
            "launch_s": 0 <= self.launch_s < 1,
            "overlap": 1 <= self.overlap < math.inf,
            "tile_m": self.tile_m >= 1,
            "tile_n": self.tile_n >= 1,
            "tiles_per_sm": self.tiles_per_sm >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"kernel model parameters out of range: {bad} in {self}")


def components(
    p: OpParams,
    gemm: bool,
    flops: Any,
    nbytes: Any,
    batch: Any,
    m: Any,
    n: Any,
    k: Any,
    elements: Any,
    sm_count: Any,
    clock_mhz: Any,
    peak_flops: Any,
    bandwidth: Any,
    l2_bytes: Any,
) -> tuple[Array, Array]:
    """Compute and memory seconds of calls, element by element (scalars or arrays)."""
    sm = np.asarray(sm_count, dtype=np.float64)
    per_sm = np.asarray(peak_flops, dtype=np.float64) / sm
    flops = np.asarray(flops, dtype=np.float64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    if gemm:
        m_, n_, k_ = (np.asarray(v, dtype=np.float64) for v in (m, n, k))
        has_view = (m_ > 0) & (n_ > 0) & (k_ > 0)
        m_, n_, k_ = np.maximum(m_, 1), np.maximum(n_, 1), np.maximum(k_, 1)
        tiles = (
            np.asarray(batch, dtype=np.float64) * np.ceil(m_ / p.tile_m) * np.ceil(n_ / p.tile_n)
        )
        slots = sm * p.tiles_per_sm
        splits = np.where(
            tiles >= slots,
            1.0,
            np.maximum(1.0, np.minimum(np.floor(slots / tiles), np.ceil(k_ / SPLIT_K_MIN))),
        )
        waves = np.ceil(tiles * splits / slots)
        tile_flops = 2.0 * p.tile_m * p.tile_n * np.ceil(k_ / splits)
        tiled = waves * p.tiles_per_sm * tile_flops / (per_sm * p.u_compute)
        # No GEMM view (m, n or k unknown): the FLOPs at the full machine's rate.
        compute = np.where(has_view, tiled, flops / (sm * per_sm * p.u_compute))
        active = np.where(has_view, np.minimum(sm, np.ceil(tiles * splits / p.tiles_per_sm)), sm)
    else:
        el = np.asarray(elements, dtype=np.float64)
        has_view = el > 0
        el = np.maximum(el, 1)
        waves = np.ceil(el / (sm * ELEMENTS_PER_SM))
        tiled = waves * ELEMENTS_PER_SM * (flops / el) / (per_sm * p.u_compute)
        compute = np.where(has_view, tiled, flops / (sm * per_sm * p.u_compute))
        active = np.where(has_view, np.minimum(sm, np.ceil(el / ELEMENTS_PER_SM)), sm)
    # Share of the L2 advantage: all of it up to half the L2 (the rest holds other lines), none
    # from a full L2 on (a streaming working set larger than L2 thrashes it).
    l2 = np.maximum(np.asarray(l2_bytes, dtype=np.float64), 1.0)
    fits = np.clip(2.0 * (1.0 - nbytes / l2), 0.0, 1.0)
    dram = np.asarray(bandwidth, dtype=np.float64) * p.u_mem * (1.0 + (p.l2_gain - 1.0) * fits)
    feed = active * p.bytes_per_clock * np.asarray(clock_mhz, dtype=np.float64) * 1e6
    memory = nbytes / np.minimum(dram, feed)
    return compute, memory


def cuda_core_alternative(
    p: OpParams, size: dict[str, Array], features: GpuFeatures, factor: float
) -> Array:
    """Compute seconds of GEMMs (matmuls, convolutions) on CUDA cores, for kernels that their
    precision puts on tensor cores: the kernel model's tiles at the FP32 peak with the chip's
    measured CUDA-core factor (``factor``), exactly as ``--no-tf32`` times them.

    Why a tensor-core GEMM has a CUDA-core alternative at all: the library picks, per
    convolution or matmul, the fastest algorithm among those allowed (cuDNN's autotuner in
    TensorFlow and PyTorch, XLA's GEMM and convolution autotuner), and allowing TF32 does not
    remove the FP32 CUDA-core algorithms from the candidates. So a kernel's compute time is
    the faster of the two (``roofline.Terms.picked_compute``): TF32 is never slower than the
    same GPU's CUDA cores. It matters where the tensor path is weak: on GeForce Ampere, Ada
    and Blackwell cards and the L40, dense TF32 is no faster than FP32 on paper, and a fit
    whose TF32 share is low (one without the A100's rows) made TF32 the slower setting there.

    FP16/BF16 kernels (mixed precision) get the same choice. Keras casts the operands to
    FP16/BF16 before the GEMM either way; cuDNN's and cuBLAS's CUDA-core algorithms read those
    operands and compute in FP32 in registers (cuDNN's "pseudo-half" configuration, cuBLAS's
    32-bit compute type), so picking one adds no cast kernel and no bytes: only the compute
    rate differs. That rate is taken as the FP32 one (the catalog has no non-tensor FP16 rate;
    some chips run FP16 on CUDA cores at twice it), so the alternative is never credited with
    speed it may not have. Every catalog GPU's FP16/BF16 tensor peak is at least twice its
    FP32 peak, and the choice binds for no FP16/BF16 kernel in any fit of the published rows
    (leaving it out changes no figure of ``make bench-predict``): a guard, for a GPU row whose
    tensor path is slow, not a correction of today's predictions.
    """
    c, _ = components(
        p, True, size["flops"], size["bytes"], size["batch"], size["m"], size["n"], size["k"],
        size["elements"], features.sm_count, features.clock_mhz, features.fp32_flops,
        features.bandwidth, features.l2_bytes,
    )  # fmt: skip
    return np.asarray(c / factor, dtype=float)


def combine(p: OpParams, compute: Array, memory: Array) -> Array:
    """launch + (compute^p + memory^p)^(1/p), never below launch + max(compute, memory)."""
    hi = np.maximum(compute, memory)
    lo = np.minimum(compute, memory)
    ratio = np.divide(lo, hi, out=np.zeros_like(hi), where=hi > 0)
    return p.launch_s + hi * (1.0 + ratio**p.overlap) ** (1.0 / p.overlap)


@dataclass(frozen=True)
class KernelModel:
    """Fitted parameters per op, and the metadata of the fit (source, rows, accuracy)."""

    params: dict[Op, OpParams]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def time(self, kernel: Kernel, gpu: GpuFeatures, peak_flops: float) -> KernelTime:
        """One call of ``kernel`` on ``gpu``; ``peak_flops`` is the rate of the kernel's
        precision (FP32 peak for FP32 math, the tensor-core rate where it applies), FLOP/s."""
        _positive("peak_flops", peak_flops)
        p = self.params[kernel.op]
        c, m = components(
            p,
            kernel.gemm,
            kernel.flops,
            kernel.bytes,
            kernel.batch,
            kernel.m,
            kernel.n,
            kernel.k,
            kernel.elements,
            gpu.sm_count,
            gpu.clock_mhz,
            peak_flops,
            gpu.bandwidth,
            gpu.l2_bytes,
        )
        seconds = float(combine(p, c, m))
        compute, memory = float(c), float(m)
        parts: dict[Bound, float] = {"compute": compute, "memory": memory, "launch": p.launch_s}
        bound = max(parts, key=parts.__getitem__)
        return KernelTime(seconds, compute, memory, p.launch_s, bound)

    def predict(self, data: KernelArrays, peak_flops: Array | None = None) -> Array:
        """Seconds of many calls at once (FP32 peak unless ``peak_flops`` is given)."""
        peak = data.fp32_flops if peak_flops is None else peak_flops
        out = np.empty(len(data))
        for op in OPS:
            rows = data.op == op
            if rows.any():
                out[rows] = _seconds(self.params[op], op, data, rows, peak[rows])
        return out

    def cuda_gemm_factor(self, chip: str, op: Op) -> tuple[float, str | None]:
        """How much faster a GPU's CUDA-core GEMMs (``op`` matmul or conv) run than the pooled
        model, measured on the kernel data (``scripts/fit_kernel_model.py --architectures``),
        and what was assumed. The factor of a measured board's chip (``CUDA_GEMM_CHIPS``: the
        V100's GV100, the A100's GA100, the P100's GP100) applies to GPUs of that chip; the
        data-centre chips after the GA100 (GH100, GB100) take the A100's, said. Other chips
        (GA102, the Ada and GeForce Blackwell parts, whose FP32 peak counts dual-issue FP32
        units; the T4's power-limited TU104) take none: the pooled model."""
        table = self.meta.get("cuda_gemm_by_architecture", {}).get("factors", {})
        for prefix, architecture in CUDA_GEMM_CHIPS.items():
            if chip.startswith(prefix) and architecture in table:
                return float(table[architecture].get(op, 1.0)), None
        if chip.startswith(("GH100", "GB100")) and "Ampere" in table:
            return float(table["Ampere"].get(op, 1.0)), (
                f"{chip}: CUDA-core GEMMs (FP32, TF32 off) at the A100's measured speed against "
                "the pooled kernel model: the kernel data has no such board"
            )
        return 1.0, None

    def memory_factor(self, memory_type: str, op: Op) -> float:
        """How much faster a board of this memory technology (HBM or GDDR, from the catalog's
        ``memory_type``) streams a memory-bound ``op`` than the pooled model, measured on the
        kernel data; 1 for an op or a technology it did not measure."""
        table = self.meta.get("memory_by_type", {}).get("factors", {})
        kind = (
            "HBM"
            if "HBM" in memory_type.upper()
            else "GDDR"
            if "GDDR" in memory_type.upper()
            else ""
        )
        return float(table.get(kind, {}).get(op, 1.0))

    @classmethod
    def load(cls) -> KernelModel:
        """The shipped fit (read once): the same as the module's :func:`load`."""
        return load()

    def to_json(self) -> dict[str, Any]:
        return {**self.meta, "params": {op: asdict(p) for op, p in self.params.items()}}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> KernelModel:
        params = {op: OpParams(**raw["params"][op]) for op in OPS}
        return cls(params, {k: v for k, v in raw.items() if k != "params"})


def _seconds(
    p: OpParams, op: Op, data: KernelArrays, rows: npt.NDArray[np.bool_], peak: Array
) -> Array:
    c, m = components_of(p, op in ("matmul", "conv"), data.take(rows), peak)
    return combine(p, c, m)


def components_of(p: OpParams, gemm: bool, d: KernelArrays, peak: Array) -> tuple[Array, Array]:
    """:func:`components` of measured rows (the fit and its predictions read the same)."""
    return components(p, gemm, d.flops, d.bytes, d.batch, d.m, d.n, d.k, d.elements,
                      d.sm_count, d.clock_mhz, peak, d.bandwidth, d.l2_bytes)  # fmt: skip


@functools.cache
def load(path: Path = MODEL_PATH) -> KernelModel:
    """The shipped fit (read once)."""
    return KernelModel.from_json(json.loads(path.read_text(encoding="utf-8")))
