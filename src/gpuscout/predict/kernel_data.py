"""The measured kernels (NeuSight's training set) as :class:`~gpuscout.predict.kernels.Kernel` rows.

One place maps a measured operator call to the kernel the model times, so the fit
(``scripts/fit_kernel_model.py``), the tests and the accuracy benchmark all see the same FLOPs,
bytes and GEMM view. The data live in the repository (``data/kernels/``, an extract of
``../shared/data/kernels`` made by ``scripts/fit_kernel_model.py --extract``), not in the
installed package: only the fitted parameters ship.

The mapping (all tensors FP32, 4 bytes an element):

- ``bmm`` B, M, N, K: B x (M x K) @ (K x N). FLOPs 2BMNK, bytes 4B(MK + KN + MN), GEMM view
  batch=B, m=M, n=N, k=K.
- ``linear``: the columns are *not* in bmm's order. The launch grids of all 6,460 V100 rows
  (``Grid x`` = ceil(K / tile), ``Grid y`` = ceil(M / tile)) show that the output is M x K: ``M``
  rows, ``N`` input features (the contracted axis), ``K`` output features. FLOPs 2MNK either way;
  bytes 4(MN + NK + MK); GEMM view m=M, n=K, k=N (B is always 1).
- ``conv`` (3x3, stride 1, padding 1 in all rows): implicit GEMM, Ho = (S + 2p - ks) / stride + 1,
  m = B Ho Wo, n = Cout, k = Cin ks ks; FLOPs 2mnk (direct convolution: cuDNN's Winograd kernels
  do fewer, which is why some rows run above the FP32 peak in direct FLOPs); bytes 4(input +
  weights + output). The extract's ``algo`` column says which algorithm cuDNN chose (``gemm``,
  ``winograd``, ``fft``); the fit uses the ``gemm`` rows only (73 % of the calls are Winograd).
- elementwise (B x H): binary ops (add, mul, div, pow) read two tensors and write one (12 bytes
  an element); unary ones (relu, gelu, tanh) and those with a scalar (the ``u`` suffix) read one
  and write one (8 bytes). FLOPs per element, roughly (they never decide the time: these kernels
  run at a few hundredths of an FLOP a byte, far below any ridge point): 1 for add, mul, div,
  relu; 4 for pow and tanh; 8 for gelu (erf).
- ``ln`` (LayerNorm over H) and ``softmax`` (over H): read the B x H input once, write the output
  once (8 bytes an element, plus LayerNorm's 2H parameters); 8 FLOPs an element for LayerNorm
  (mean, variance, normalise, scale, shift), 5 for softmax (max, subtract, exp, sum, divide).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from gpuscout.predict.kernel_model import GpuFeatures
from gpuscout.predict.kernels import Kernel, Op

DataOp = Literal["bmm", "linear", "conv", "elem", "ln", "softmax"]
DATA_OPS: tuple[DataOp, ...] = ("bmm", "linear", "conv", "elem", "ln", "softmax")
# Which of the model's ops a measured operator is an instance of.
OP_OF: dict[DataOp, Op] = {
    "bmm": "matmul",
    "linear": "matmul",
    "conv": "conv",
    "elem": "elementwise",
    "ln": "reduction",
    "softmax": "reduction",
}
BINARY = ("add", "mul", "div", "pow")
UNARY = ("addu", "mulu", "divu", "powu", "relu", "gelu", "tanh")
ELEM_FLOPS = {"add": 1, "mul": 1, "div": 1, "relu": 1, "pow": 4, "tanh": 4, "gelu": 8}
# The extract's columns, in order; a shape cell is empty where the operator has no such axis.
COLUMNS = (
    "op",
    "device",
    "latency_ms",
    "algo",
    "B",
    "M",
    "N",
    "K",
    "H",
    "Cin",
    "Cout",
    "ks",
    "size",
    "stride",
    "pad",
)
SHAPE_COLUMNS = COLUMNS[4:]
# Convolutions: the algorithm cuDNN chose, from the call's kernels. ``winograd`` and ``fft`` do
# fewer FLOPs than a direct convolution (so they may run "above peak" in direct FLOPs), ``gemm``
# (implicit / precomputed / explicit GEMM) does them all, as tensor-core convolutions do.
CONV_ALGOS = ("gemm", "winograd", "fft")

F32 = 4  # bytes an element


def data_dir() -> Path:
    """``data/kernels`` of the repository this module is in (a source checkout)."""
    return Path(__file__).resolve().parents[3] / "data" / "kernels"


def data_op(op_name: str) -> DataOp:
    """The data op type of a row's operator name (``addu`` -> ``elem``)."""
    if op_name in BINARY or op_name in UNARY:
        return "elem"
    if op_name in ("bmm", "linear", "conv", "ln", "softmax"):
        return op_name  # type: ignore[return-value]
    raise ValueError(f"unknown operator {op_name!r} in the kernel data")


def kernel_of(op_name: str, shape: dict[str, int]) -> Kernel:
    """The kernel a measured operator call runs, from its name and shape columns."""
    kind = data_op(op_name)
    if kind in ("bmm", "linear"):  # linear's N is the contracted size, K its outputs
        b, m = shape["B"], shape["M"]
        n, k = (shape["N"], shape["K"]) if kind == "bmm" else (shape["K"], shape["N"])
        return Kernel(
            op="matmul",
            flops=2.0 * b * m * n * k,
            bytes=F32 * b * (m * k + k * n + m * n),
            batch=b,
            m=m,
            n=n,
            k=k,
        )
    if kind == "conv":
        b, cin, cout, ks = shape["B"], shape["Cin"], shape["Cout"], shape["ks"]
        size, stride, pad = shape["size"], shape["stride"], shape["pad"]
        ho = (size + 2 * pad - ks) // stride + 1
        if ho < 1:
            raise ValueError(f"conv row with no output pixels: {shape}")
        m, n, k = b * ho * ho, cout, cin * ks * ks
        data = b * cin * size * size + cout * k + m * n
        return Kernel(op="conv", flops=2.0 * m * n * k, bytes=F32 * data, m=m, n=n, k=k)
    elements = shape["B"] * shape["H"]
    if kind == "elem":
        base = op_name.removesuffix("u") if op_name in ("addu", "mulu", "divu", "powu") else op_name
        reads = 2 if op_name in BINARY else 1
        return Kernel(
            op="elementwise",
            flops=float(ELEM_FLOPS[base] * elements),
            bytes=float(F32 * (reads + 1) * elements),
            elements=elements,
        )
    if kind == "ln":
        return Kernel(
            op="reduction",
            flops=8.0 * elements,
            bytes=float(F32 * (2 * elements + 2 * shape["H"])),
            elements=elements,
        )
    return Kernel(
        op="reduction", flops=5.0 * elements, bytes=float(F32 * 2 * elements), elements=elements
    )


def load_devices(directory: Path | None = None) -> dict[str, GpuFeatures]:
    """The measured GPUs' features, by the device name the rows carry."""
    path = (directory or data_dir()) / "devices.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: GpuFeatures(
            sm_count=int(d["sm_count"]),
            clock_mhz=float(d["clock_mhz"]),
            fp32_flops=float(d["fp32_flops"]),
            bandwidth=float(d["bandwidth"]),
            l2_bytes=float(d["l2_bytes"]),
        )
        for name, d in raw["devices"].items()
    }


@dataclass(frozen=True)
class KernelRow:
    """One measured call: the kernel, the GPU it ran on, and its measured time."""

    kernel: Kernel
    gpu: GpuFeatures
    seconds: float
    device: str
    data_op: DataOp
    algo: str = ""  # convolutions: gemm, winograd or fft (see CONV_ALGOS)


def _read(directory: Path, every: int = 1) -> Iterator[tuple[str, str, float, str, dict[str, int]]]:
    path = directory / "kernels.csv.gz"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the kernel data live in a source checkout (data/kernels); "
            "scripts/fit_kernel_model.py makes them from ../shared/data/kernels (see its --help)"
        )
    with gzip.open(path, "rt", newline="", encoding="utf-8") as f:
        for i, row in enumerate(csv.DictReader(f)):
            if i % every:
                continue
            shape = {c: int(row[c]) for c in SHAPE_COLUMNS if row[c] != ""}
            yield row["op"], row["device"], float(row["latency_ms"]) * 1e-3, row["algo"], shape


def load_rows(directory: Path | None = None, every: int = 1) -> list[KernelRow]:
    """The measured calls of ``data/kernels`` as :class:`KernelRow` s: all of them, or every
    ``every``-th (a systematic sample across operators and GPUs, for fast tests)."""
    if every < 1:
        raise ValueError(f"every = {every} must be >= 1")
    directory = directory or data_dir()
    devices = load_devices(directory)
    return [
        KernelRow(kernel_of(op, shape), devices[device], seconds, device, data_op(op), algo)
        for op, device, seconds, algo, shape in _read(directory, every)
    ]


@dataclass(frozen=True)
class KernelArrays:
    """The same rows as columns, for fitting and scoring many at once."""

    op: npt.NDArray[np.str_]  # the model's op
    data_op: npt.NDArray[np.str_]
    device: npt.NDArray[np.str_]
    algo: npt.NDArray[np.str_]
    flops: npt.NDArray[np.float64]
    bytes: npt.NDArray[np.float64]
    batch: npt.NDArray[np.float64]
    m: npt.NDArray[np.float64]
    n: npt.NDArray[np.float64]
    k: npt.NDArray[np.float64]
    elements: npt.NDArray[np.float64]
    sm_count: npt.NDArray[np.float64]
    clock_mhz: npt.NDArray[np.float64]
    fp32_flops: npt.NDArray[np.float64]
    bandwidth: npt.NDArray[np.float64]
    l2_bytes: npt.NDArray[np.float64]
    seconds: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.seconds)

    def take(self, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> KernelArrays:
        """The rows at ``index`` (an index array or a mask)."""
        return KernelArrays(**{f: getattr(self, f)[index] for f in self.__dataclass_fields__})


def arrays_of(rows: list[KernelRow]) -> KernelArrays:
    """Rows as columns."""

    def col(values: list[float]) -> npt.NDArray[np.float64]:
        return np.asarray(values, dtype=np.float64)

    return KernelArrays(
        op=np.asarray([r.kernel.op for r in rows]),
        data_op=np.asarray([r.data_op for r in rows]),
        device=np.asarray([r.device for r in rows]),
        algo=np.asarray([r.algo for r in rows]),
        flops=col([r.kernel.flops for r in rows]),
        bytes=col([r.kernel.bytes for r in rows]),
        batch=col([r.kernel.batch for r in rows]),
        m=col([r.kernel.m for r in rows]),
        n=col([r.kernel.n for r in rows]),
        k=col([r.kernel.k for r in rows]),
        elements=col([r.kernel.elements for r in rows]),
        sm_count=col([r.gpu.sm_count for r in rows]),
        clock_mhz=col([r.gpu.clock_mhz for r in rows]),
        fp32_flops=col([r.gpu.fp32_flops for r in rows]),
        bandwidth=col([r.gpu.bandwidth for r in rows]),
        l2_bytes=col([r.gpu.l2_bytes for r in rows]),
        seconds=col([r.seconds for r in rows]),
    )


def mape(predicted: npt.NDArray[np.float64], measured: npt.NDArray[np.float64]) -> float:
    """Mean absolute percentage error, in percent."""
    return (
        float(np.mean(np.abs(predicted - measured) / measured) * 100.0)
        if len(measured)
        else (math.nan)
    )
