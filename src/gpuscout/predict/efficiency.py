"""What the kernels cannot know, and the assumed costs no published row identifies.

:class:`Efficiency` holds the factors fitted to published end-to-end rows (``calibrate.py``):
tensor-core shares and how they follow tensor FLOPs per SM-clock, the board power full clocks
need, a stack's DRAM traffic and convolution layout. The assumed costs are data files, each
sourced: launch, training-step and forward-call costs (``data/overheads.csv``) and the rate at
which a traced step's elementwise ops issue (``data/instruction_rates.csv``). Apart from
``roofline.py``, which turns them into kernel times, so each stays a file one can read whole.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np

from gpuscout.catalog.cloud_overheads import Overhead, read_overheads

# The kinds of tensor-core kernels whose share of the peak is fitted end to end: the kernel data
# is FP32 only, and cuDNN's implicit-GEMM convolutions do not reach what cuBLAS's GEMMs do.
TENSOR_KINDS = ("matmul TF32", "matmul FP16/BF16", "conv TF32", "conv FP16/BF16")
# Tensor FLOPs per SM per clock at which a fitted share applies as it is (Volta, Turing, and the
# professional Ampere and Ada parts in FP16; A100 is 2,048, H100 about 3,800, B200 about 7,700).
RHO_REF = 1024.0
# Sustained clock under compute load ~ (board power / power for full clocks) ** POWER_EXPONENT
# when the board power is short: a fixed assumption, not a fit (with the voltage following the
# clock, power grows about as clock^2 to clock^3 over a GPU's boost range).
POWER_EXPONENT = 0.5


@functools.cache
def overheads() -> dict[str, Overhead]:
    """``data/overheads.csv``: launch, training-step and forward-call costs, each sourced
    (read once: every efficiency and every evaluation of a fit asks for them)."""
    path = resources.files("gpuscout.predict") / "data" / "overheads.csv"
    with path.open(encoding="utf-8") as f:
        return read_overheads(f)


@functools.cache
def hlo_op_share() -> float:
    """``data/instruction_rates.csv``: the share of the CUDA cores' FP32 FLOP peak at which a
    traced step's elementwise and reduction kernels issue their HLO-counted FLOPs (one
    instruction per HLO op an element; the peak counts a multiply-add as 2 FLOPs), sourced."""
    path = resources.files("gpuscout.predict") / "data" / "instruction_rates.csv"
    with path.open(encoding="utf-8") as f:
        return {r["name"]: float(r["value"]) for r in csv.DictReader(f)}["hlo_op_share"]


@dataclass(frozen=True)
class Efficiency:
    """What the kernels cannot know: fitted to published end-to-end rows (``calibrate.py``) or,
    for the overheads no published row can identify, assumed in ``data/overheads.csv``."""

    # per TENSOR_KINDS: the share of their own (tensor) peak that tensor-core kernels of that
    # kind reach at RHO_REF tensor FLOPs per SM a clock, in full tiles (at most 1: the peak)
    tensor: tuple[float, float, float, float]
    step_s: float  # the framework's cost per step or call, seconds (dispatch, host sync)
    launch_s: float  # per kernel: launch and the gap to the next kernel, seconds
    # the software stack's DRAM traffic against the bytes counted on XLA's fused HLO: a
    # framework that fuses less (PyTorch eager: a batch norm, then its ReLU) moves more. It
    # scales bytes, never the bandwidth, so no kernel moves data faster than the DRAM peak.
    traffic: float = 1.0
    # per kind (matmuls, convolutions): how a tensor-core kernel's speed follows the tensor
    # FLOPs an SM does a clock, as (rho / RHO_REF) ** exponent; the rest of such a kernel
    # (operand loads, address maths, epilogue) runs at the SM's clock. 1: all of the peak.
    scaling: tuple[float, float] = (1.0, 1.0)
    # watts of board power a GPU needs per SM-GHz for its compute kernels to hold full clocks;
    # a GPU with less slows them by (need / board power) ** POWER_EXPONENT. 0: never slowed.
    power_w: float = 0.0
    forward_s: float = 0.0  # the cost of one forward call (inference), in place of step_s
    # 1: the stack runs its tensor-core convolutions on NCHW tensors, so cuDNN transposes each
    # convolution's operands to NHWC and its result back (``Terms.relayout``); 0: NHWC, the
    # layout XLA assigns to the traced step (no transposes). A known property of a stack
    # (``data/conv_layouts.csv``), not a fitted factor.
    relayout: float = 0.0

    def share(self, kind: np.ndarray, rho: np.ndarray, cap: np.ndarray | float = 1.0) -> np.ndarray:
        """Per kernel: the factor on the kernel model's utilisation it reaches. ``cap`` is 1 /
        the kernel model's utilisation of the kernel's op, so ``cap`` x share-of-peak is the
        factor that puts it at that share of its units' peak. CUDA-core GEMMs (kind 0) keep
        the kernel model's own utilisation, learned from measured FP32 GEMMs; a tensor-core
        kernel reaches its kind's fitted share of its peak at ``RHO_REF``, scaled by
        (rho / RHO_REF) ** (exponent - 1). Never above ``cap``: a kernel never runs faster
        than its units' peak (its roofline)."""
        tensor = np.concatenate([[1.0], self.tensor])[kind]
        base = np.where(kind > 0, tensor * cap, 1.0)
        exponent = np.where(kind >= 3, self.scaling[1], self.scaling[0])
        ratio = np.where(kind > 0, np.maximum(rho, 1.0) / RHO_REF, 1.0)
        return np.asarray(np.minimum(cap, base * ratio ** (exponent - 1.0)), dtype=float)

    def power_slowdown(self, sm_ghz_per_w: float) -> float:
        """Compute time's factor on a GPU with this many SM-GHz per watt of board power."""
        return max(1.0, self.power_w * sm_ghz_per_w) ** POWER_EXPONENT if sm_ghz_per_w else 1.0


__all__ = [
    "POWER_EXPONENT",
    "RHO_REF",
    "TENSOR_KINDS",
    "Efficiency",
    "Overhead",
    "hlo_op_share",
    "overheads",
]
