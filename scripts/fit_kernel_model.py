"""Fit the kernel-level utilisation model on measured kernels and ship its parameters.

    python scripts/fit_kernel_model.py --extract ../shared/data/kernels   # make data/kernels
    python scripts/fit_kernel_model.py                                    # fit, write the JSON

``--extract`` copies NeuSight's measured kernels (MIT) into ``data/kernels/``: only the columns
the fit needs (operator, device, shape, latency rounded to 4 significant digits), the five GPUs'
features, and the README with its licence notice. The default fits each op's parameters (see
:mod:`gpuscout.predict.kernel_model`) on a random subsample of at most ``--per-group`` rows per
(operator, GPU), scores leave-one-GPU-out MAPE per operator on *all* rows of the held-out GPU,
and writes ``src/gpuscout/predict/data/kernel_model.json``. A few minutes on 2 cores at most.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

from gpuscout.predict.kernel_data import (
    COLUMNS,
    DATA_OPS,
    OP_OF,
    SHAPE_COLUMNS,
    KernelArrays,
    arrays_of,
    data_dir,
    load_rows,
    mape,
)
from gpuscout.predict.kernel_fit import fit_op
from gpuscout.predict.kernel_model import MODEL_PATH, KernelModel, OpParams
from gpuscout.predict.kernels import OPS, Op

SOURCE = (
    "NeuSight (github.com/sitar-lab/NeuSight, commit 6945927, scripts/asplos/data/dataset/train; "
    "MIT, (c) 2025 Georgia Institute of Technology and Microsoft Corporation): PyTorch 2.1, "
    "CUDA 12.1, FP32 (TF32 off)"
)
# The A100 80GB PCIe (convolutions only) has no device_configs file: its features are NVIDIA's
# A100 datasheet figures (as the catalog's a100-80gb-pcie row), L2 as the A100 40GB.
A100_80GB = {
    "Device": "NVIDIA A100 80GB PCIe",
    "Mem_Bw": 1935,
    "Num_Sm": 108,
    "Freq": 1410,
    "SingleFLOPs": 19492,
    "L2Cache": 40,
}
SHAPES = {
    "bmm": ("B", "M", "N", "K"),
    "linear": ("B", "M", "N", "K"),
    "elem": ("B", "H"),
    "ln": ("B", "H"),
    "softmax": ("B", "H"),
    "conv": (
        "B",
        "Input_Channel",
        "Output_Channel",
        "Kernel_Szie",
        "Input_Size",
        "Stride",
        "Padding",
    ),
}
CONV_NAMES = dict(
    zip(SHAPES["conv"], ("B", "Cin", "Cout", "ks", "size", "stride", "pad"), strict=True)
)
EXTRACT_NOTE = """
---

**This folder is an extract**, made by `python scripts/fit_kernel_model.py --extract
../shared/data/kernels` from the files described above: all {rows:,} rows, only the columns
the kernel model needs, in one file `kernels.csv.gz` with columns {columns} (`op` is the
`OPName`, `latency_ms` the `Latency` rounded to 4 significant digits, `algo` conv's algorithm
from the `Kernels` column (`winograd` or `fft` if a kernel of the call says so, else `gemm`),
conv's `Input_Channel`, `Output_Channel`, `Kernel_Szie`, `Input_Size`, `Stride`, `Padding`
renamed `Cin`, `Cout`, `ks`, `size`, `stride`, `pad`; a cell is empty where the operator has no
such axis), and
`devices.json` (the GPUs' features from `device_configs/*.json` in SI units; the A100 80GB PCIe,
which has no config file, from NVIDIA's A100 datasheet). The MIT notice above applies to it.
"""


def conv_algo(kernels: str) -> str:
    """The algorithm of a convolution call, from the names of its kernels."""
    names = kernels.lower()
    return "winograd" if "winograd" in names else "fft" if "fft" in names else "gemm"


def extract(source: Path, out: Path) -> None:
    """Write the compact copy of the measured kernels to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = 0
    with gzip.open(
        out / "kernels.csv.gz", "wt", newline="", encoding="utf-8", compresslevel=9
    ) as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for kind in DATA_OPS:
            for path in sorted(source.glob(f"{kind}__*.csv.gz")):
                with gzip.open(path, "rt", newline="", encoding="utf-8") as g:
                    for row in csv.DictReader(g):
                        cells = dict.fromkeys(SHAPE_COLUMNS, "")
                        for col in SHAPES[kind]:
                            cells[CONV_NAMES.get(col, col) if kind == "conv" else col] = row[col]
                        latency = f"{float(row['Latency']):.4g}"
                        algo = conv_algo(row["Kernels"]) if kind == "conv" else ""
                        writer.writerow(
                            [row["OPName"], row["Device"], latency, algo, *cells.values()]
                        )
                        rows += 1
    configs = [
        json.loads(p.read_text()) for p in sorted((source / "device_configs").glob("*.json"))
    ]
    devices = {
        c["Device"]: {
            "sm_count": c["Num_Sm"],
            "clock_mhz": c["Freq"],
            "fp32_flops": c["SingleFLOPs"] * 1e9,
            "bandwidth": c["Mem_Bw"] * 1e9,
            "l2_bytes": c["L2Cache"] * 1e6,
        }
        for c in [*configs, A100_80GB]
    }
    note = "device_configs/*.json of the source; A100 80GB PCIe from NVIDIA's A100 datasheet"
    (out / "devices.json").write_text(
        json.dumps({"source": note, "devices": devices}, indent=1) + "\n", encoding="utf-8"
    )
    readme = (source / "README.md").read_text(encoding="utf-8")
    columns = ", ".join(f"`{c}`" for c in COLUMNS)
    (out / "README.md").write_text(
        readme.rstrip() + "\n" + EXTRACT_NOTE.format(rows=rows, columns=columns), encoding="utf-8"
    )
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {rows:,} rows to {out} ({size / 1e6:.2f} MB)")


def subsample(data: KernelArrays, per_group: int, seed: int) -> KernelArrays:
    """At most ``per_group`` random rows of each (operator, GPU), for a fit of minutes."""
    rng = np.random.default_rng(seed)
    keep: list[np.ndarray] = []
    # Convolutions: only those cuDNN ran as a GEMM. Winograd and FFT do fewer FLOPs than the
    # direct convolution the model (and the roofline) counts, and tensor-core convolutions,
    # what mixed precision runs, are implicit GEMMs.
    usable = (data.data_op != "conv") | (data.algo == "gemm")
    for kind in DATA_OPS:
        for device in np.unique(data.device):
            index = np.flatnonzero((data.data_op == kind) & (data.device == device) & usable)
            if len(index) > per_group:
                index = rng.choice(index, per_group, replace=False)
            keep.append(index)
    return data.take(np.sort(np.concatenate(keep)))


def family_of(device: str) -> str:
    return "A100" if "A100" in device else device


# The architecture of each measured GPU (NVIDIA's product pages), and which boards can say what
# an architecture's CUDA-core GEMMs reach: the 70-75 W P4 and T4 cannot (their clocks sag under
# a GEMM's load, which the end-to-end power term models), so Turing has no factor of its own.
ARCHITECTURE = {"A100": "Ampere", "P100": "Pascal", "P4": "Pascal", "T4": "Turing",
                "V100": "Volta"}  # fmt: skip
FULL_POWER = ("A100", "P100", "V100")


def architecture_of(device: str) -> str:
    return next(a for key, a in ARCHITECTURE.items() if key in device.split("-")[0].split())


def architecture_factors(model: KernelModel, data: KernelArrays) -> dict[str, object]:
    """Per architecture and GEMM op: how much faster (>1) or slower its measured CUDA-core
    GEMMs run than the pooled model says, as exp(median log(model / measured)) over the calls
    the model times as compute-bound and longer than the median call (small calls measure the
    launch, not the units), GEMM-algorithm convolutions only (Winograd and FFT do fewer FLOPs).
    Full-power boards only (``FULL_POWER``)."""
    from gpuscout.predict.kernel_model import components_of

    out: dict[str, dict[str, float]] = {}
    devices = np.array([str(d) for d in data.device])
    for op in ("matmul", "conv"):
        p = model.params[op]
        rows = (data.op == op) & ((data.data_op != "conv") | (data.algo == "gemm"))
        compute, memory = components_of(p, True, data, data.fp32_flops)
        modelled = model.predict(data)
        for device in sorted(set(devices[rows])):
            if not any(key in device for key in FULL_POWER):
                continue
            at = rows & (devices == device) & (compute > memory)
            at &= data.seconds > np.median(data.seconds[rows & (devices == device)])
            ratio = float(np.exp(np.median(np.log(modelled[at] / data.seconds[at]))))
            entry = out.setdefault(architecture_of(device), {})
            entry[op] = round(ratio, 4)
            entry[f"{op}_rows"] = int(at.sum())
            entry[f"{op}_from"] = device  # type: ignore[assignment]
    return {
        "factors": out,
        "note": (
            "CUDA-core (FP32, TF32 off) GEMMs and GEMM-algorithm convolutions of the measured "
            "full-power boards (A100, P100, V100), each against the model pooled over five GPUs: "
            "exp(median log(model / measured)) over compute-bound calls longer than the median. "
            "A GPU of another architecture takes Ampere's (the newest measured), said in its "
            "prediction; Turing's only board (T4, 70 W) is power-limited, so it takes none"
        ),
        "made_by": "python scripts/fit_kernel_model.py --architectures",
    }


# Memory technology of each measured board (NVIDIA's datasheets). The P100's HBM2 (Pascal, the
# first HBM2 controller) measures below both classes and no catalog GPU is a Pascal: left out.
MEMORY = {"A100": "HBM", "V100": "HBM", "P4": "GDDR", "T4": "GDDR"}


def memory_factors(model: KernelModel, data: KernelArrays) -> dict[str, object]:
    """Per memory technology (HBM, GDDR) and streaming op (elementwise, reduction): how much
    faster (>1) its boards move a memory-bound kernel's bytes than the pooled model says,
    exp(median log(model / measured)) over the memory-bound calls longer than the median."""
    from gpuscout.predict.kernel_model import components_of

    devices = np.array([str(d) for d in data.device])
    modelled = model.predict(data)
    out: dict[str, dict[str, object]] = {}
    for op in ("elementwise", "reduction"):
        compute, memory = components_of(model.params[op], False, data, data.fp32_flops)
        for kind in ("HBM", "GDDR"):
            boards = [key for key, value in MEMORY.items() if value == kind]
            on = np.array([any(key in d for key in boards) for d in devices])
            at = (data.op == op) & on & (memory > compute)
            at &= data.seconds > np.median(data.seconds[at])
            ratio = float(np.exp(np.median(np.log(modelled[at] / data.seconds[at]))))
            entry = out.setdefault(kind, {"from": ", ".join(sorted(set(devices[at])))})
            entry[op] = round(ratio, 4)
            entry[f"{op}_rows"] = int(at.sum())
    return {
        "factors": out,
        "note": (
            "memory-bound elementwise and reduction calls of the HBM boards (A100, V100) and the "
            "GDDR boards (P4, T4), each against the model pooled over five GPUs: exp(median "
            "log(model / measured)) over the calls longer than the median. The P100 (Pascal's "
            "HBM2) is left out: it measures below both, and no catalog GPU is a Pascal"
        ),
        "made_by": "python scripts/fit_kernel_model.py --architectures",
    }


def fit_all(data: KernelArrays) -> dict[Op, OpParams]:
    return {op: fit_op(op, data)[0] for op in OPS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extract", type=Path, metavar="DIR", help="make data/kernels from DIR")
    parser.add_argument("--data", type=Path, default=data_dir())
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--per-group", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--architectures",
        action="store_true",
        help="only (re)compute the shipped fit's CUDA-core GEMM factors per architecture and "
        "memory factors per memory technology",
    )
    args = parser.parse_args(argv)
    if args.extract:
        extract(args.extract, args.data)
        return 0
    if args.architectures:
        shipped = json.loads(args.out.read_text(encoding="utf-8"))
        model = KernelModel.from_json(shipped)
        rows = arrays_of(load_rows(args.data))
        shipped["cuda_gemm_by_architecture"] = architecture_factors(model, rows)
        shipped["memory_by_type"] = memory_factors(model, rows)
        args.out.write_text(json.dumps(shipped, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(shipped["cuda_gemm_by_architecture"], indent=1))
        print(json.dumps(shipped["memory_by_type"], indent=1))
        return 0
    start, cpu_start = time.perf_counter(), time.process_time()
    everything = arrays_of(load_rows(args.data))
    data = subsample(everything, args.per_group, args.seed)
    print(
        f"{len(everything):,} rows; fitting on {len(data):,} (<= {args.per_group} per op and GPU)"
    )
    logo: dict[str, dict[str, object]] = {}
    held_out: dict[str, dict[str, float]] = {}
    predicted = np.empty(len(everything))
    # A100 40GB (matmuls, elementwise, norms) and A100 80GB (convolutions) are one GPU: they are
    # held out together, so no A100 is seen when an A100 is predicted.
    for family in sorted({family_of(d) for d in np.unique(everything.device)}):
        train = data.take(np.array([family_of(d) != family for d in data.device]))
        test = np.array([family_of(d) == family for d in everything.device])
        predicted[test] = KernelModel(fit_all(train)).predict(everything.take(test))
        print(f"  held out {family}: {time.perf_counter() - start:.0f} s", flush=True)
    scored: dict[str, np.ndarray] = {kind: everything.data_op == kind for kind in DATA_OPS}
    scored["conv"] = scored["conv"] & (everything.algo == "gemm")
    scored["conv_winograd_fft"] = (everything.data_op == "conv") & (everything.algo != "gemm")
    for kind, rows in scored.items():
        held_out[kind] = {}
        for device in np.unique(everything.device[rows]):
            at = rows & (everything.device == device)
            held_out[kind][str(device)] = round(mape(predicted[at], everything.seconds[at]), 1)
        logo[kind] = {
            "op": OP_OF["conv" if kind.startswith("conv") else kind],  # type: ignore[index]
            "mape_pct": round(mape(predicted[rows], everything.seconds[rows]), 1),
            "median_ape_pct": round(
                float(np.median(np.abs(predicted[rows] / everything.seconds[rows] - 1)) * 100), 1
            ),
            "rows": int(rows.sum()),
            "mape_pct_per_gpu": held_out[kind],
        }
    final = fit_all(data)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    in_sample = KernelModel(final).predict(everything)
    meta = {
        "format": 1,
        "source": SOURCE,
        "made_by": "python scripts/fit_kernel_model.py",
        "made_on": dt.date.today().isoformat(),
        "rows_total": len(everything),
        "rows_fitted": len(data),
        "subsample": f"at most {args.per_group} random rows per (operator, GPU), seed {args.seed}",
        "leave_one_gpu_out": logo,
        "leave_one_gpu_out_note": (
            "fit on four GPUs' subsample, MAPE on every row of the fifth (A100 40GB and 80GB held "
            "out together); latency includes PyTorch's per-call overhead, as measured. conv: "
            "calls cuDNN ran as a GEMM (fitted on those); conv_winograd_fft: the others, which "
            "do fewer FLOPs than the model counts (not fitted, shown for honesty)"
        ),
        "in_sample_mape_pct": {
            kind: round(mape(in_sample[rows], everything.seconds[rows]), 1)
            for kind, rows in scored.items()
        },
        "fit_seconds": round(seconds, 1),
        "fit_cpu_seconds": round(cpu_seconds, 1),
    }
    model = KernelModel(final, meta)
    meta["cuda_gemm_by_architecture"] = architecture_factors(model, everything)
    meta["memory_by_type"] = memory_factors(model, everything)
    model = KernelModel(final, meta)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    print(json.dumps(model.to_json(), indent=1))
    print(f"wrote {args.out} in {seconds:.0f} s ({cpu_seconds:.0f} s of CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
