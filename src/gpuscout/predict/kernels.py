"""The kernels of a training step, as the per-kernel model (``kernel_model.py``) times them.

A step is the list of kernels the GPU runs: after XLA's fusion, one fused computation or one
library call (cuBLAS GEMM, cuDNN convolution) is one kernel. What the model needs of a kernel is
its work (FLOPs), its memory traffic (bytes), and how much parallel work it offers the GPU: a
GEMM view (``batch`` x ``m`` x ``n``, contracted over ``k``) for matmuls and convolutions (a
convolution runs as an implicit GEMM: m = images x output pixels, n = output channels, k =
window x input channels per group), the output elements for the rest. Small kernels leave most
of a big GPU's SMs idle; that, not a global efficiency constant, is why a step does not speed up
with a GPU's peak.

Identical kernels (same op and shapes) are kept once with a ``count``, so a profile of a
24-layer transformer stays small.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# matmul: dot (linear layers, attention's batched matmuls); conv: convolution (implicit GEMM);
# elementwise: a loop fusion of elementwise ops and data movement; reduction: a reduce (with its
# fused elementwise producers): softmax, layer/batch norm statistics, loss, bias gradients.
Op = Literal["matmul", "conv", "elementwise", "reduction"]
OPS: tuple[Op, ...] = ("matmul", "conv", "elementwise", "reduction")


class Kernel(BaseModel):
    """One kernel of a step; all sizes are per call, ``count`` calls per step."""

    model_config = ConfigDict(frozen=True)

    op: Op
    flops: float = Field(ge=0)
    bytes: float = Field(ge=0)  # estimated DRAM traffic: inputs read + outputs written
    dtype: str = "f32"  # of the math: f32, f16, bf16 (the HLO element type of its operands)
    batch: int = Field(default=1, ge=1)  # GEMM view (matmul, conv): independent GEMMs
    m: int = Field(default=0, ge=0)
    n: int = Field(default=0, ge=0)
    k: int = Field(default=0, ge=0)
    elements: int = Field(default=0, ge=0)  # output elements (elementwise, reduction: input)
    count: int = Field(default=1, ge=1)

    @property
    def gemm(self) -> bool:
        return self.op in ("matmul", "conv")

    def key(self) -> tuple[object, ...]:
        """What makes two kernels identical (everything but the count)."""
        return (self.op, self.flops, self.bytes, self.dtype, self.batch, self.m, self.n, self.k,
                self.elements)  # fmt: skip


def merge(kernels: list[Kernel], keys: list[object] | None = None) -> list[Kernel]:
    """Identical kernels kept once, with their counts added, in first-seen order; ``keys``
    (one per kernel) says what is identical, by default ``Kernel.key()``."""
    seen: dict[object, int] = {}
    out: list[Kernel] = []
    for kernel, key in zip(kernels, keys or [k.key() for k in kernels], strict=True):
        if key in seen:
            i = seen[key]
            out[i] = out[i].model_copy(update={"count": out[i].count + kernel.count})
        else:
            seen[key] = len(out)
            out.append(kernel)
    return out
