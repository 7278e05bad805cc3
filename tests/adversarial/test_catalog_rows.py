"""Rows for user catalogs and the default cost (issue 17): impossible catalog rows are refused
in one line naming file, line, column, value and range, with the likely unit fix; the default
``cost`` works, and an option nobody in the catalog rents is shown without a price."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from gpuscout.catalog.catalog import data_dir
from tests.adversarial.table import Case, cases, run_case


def _gpu_file(gpu_id: str = "rtx-4090", **cells: str) -> dict[str, str]:
    """A GPU file of one shipped row with ``cells`` changed: {'gpus.csv': text}."""
    with (data_dir() / "gpus.csv").open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == gpu_id)
    row.update(cells)
    out = io.StringIO()
    writer = csv.DictWriter(out, list(row))
    writer.writeheader()
    writer.writerow(row)
    return {"gpus.csv": out.getvalue()}


def _price_file(**cells: str) -> dict[str, str]:
    row = {
        "gpu_id": "rtx-4090",
        "provider": "my-cloud",
        "kind": "on_demand",
        "usd_per_gpu_hour": "0.5",
        "source": "a quote",
        "retrieved_on": "2026-11-30",
        **cells,
    }
    head = ",".join(row)
    return {"prices.csv": f"{head}\n{','.join(row.values())}\n"}


def _claims_file(column: str, value: str) -> dict[str, str]:
    """A claims file of one speed claim (87 s per epoch on an RTX 3090) with ``column`` set."""
    row = {"gpu": "rtx-3090", "workload": "resnet50", "precision": "mixed_float16"}
    row.update({"epoch_seconds": "87", column: value})
    return {"claims.csv": f"{','.join(row)}\n{','.join(row.values())}\n"}


MINE = "{tmp}/gpus.csv"
CLAIMS = ("audit", "--file", "{tmp}/claims.csv", "--json")
PREDICT = ("predict", "--workload", "resnet50", "--gpus", "h100", "--catalog", MINE)

CASES = [
    # The typo: TB/s in the GB/s column, refused before it reaches the calibration.
    Case(
        PREDICT,
        2,
        "column 'memory_bandwidth_gb_per_s': 1.008 is outside 50..20,000 GB/s for rtx-4090. "
        "To fix: 1.008 looks like TB/s; the column is GB/s: write 1008.",
        _gpu_file(memory_bandwidth_gb_per_s="1.008"),
    ),
    Case(
        ("calibrate", "--catalog", MINE),
        2,
        "1.008 looks like TB/s",
        _gpu_file(memory_bandwidth_gb_per_s="1.008"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "column 'fp16_tensor_fp32acc_tflops': 'inf' is not a finite number",
        _gpu_file(fp16_tensor_fp32acc_tflops="inf"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "column 'bf16_tensor_tflops': 'nan' is not a finite number",
        _gpu_file(bf16_tensor_tflops="nan"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "column 'fp32_tflops': 500 TFLOP/s is above tf32_tensor_tflops (82.6)",
        _gpu_file(fp32_tflops="500"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "82600 looks like GFLOP/s; the column is TFLOP/s: write 82.6",
        _gpu_file(fp32_tflops="82600"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "24576 looks like MiB; the column is GB: write 24",
        _gpu_file(memory_gb="24576"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "0.45 looks like kW; the column is W: write 450",
        _gpu_file(tdp_w="0.45"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "6000 looks like a 2:4-sparse headline; the column is dense TFLOP/s: write 3000",
        _gpu_file(bf16_tensor_tflops="6000"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "column 'fp8_tensor_tflops': 100 TFLOP/s is below the fp16/bf16 tensor rate (165.2)",
        _gpu_file(fp8_tensor_tflops="100"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "column 'fp64_tflops': 90 TFLOP/s is above fp32_tflops (82.6)",
        _gpu_file(fp64_tflops="90"),
    ),
    Case(
        ("specs", "--catalog", MINE),
        2,
        "is 819 FLOP per byte for rtx-4090; GPUs lie between 2 and 400",
        _gpu_file(memory_bandwidth_gb_per_s="100.8"),
    ),
    Case(
        ("cost", "--gpu-hours", "10", "--option", "4090@my-cloud", "--catalog", "{tmp}/prices.csv"),
        2,
        "3400 is outside 0.01..200 USD per GPU-hour for rtx-4090. To fix: 3400 looks like cents",
        _price_file(usd_per_gpu_hour="3400"),
    ),
    Case(
        ("prices", "--catalog", "{tmp}/prices.csv"),
        2,
        "column 'usd_per_gpu_hour': 'inf' is not a finite number",
        _price_file(usd_per_gpu_hour="inf"),
    ),
    # A claims file gets the ranges of the options of the same names.
    Case(
        CLAIMS,
        2,
        "column 'epoch_seconds': must be a finite number, got inf",
        _claims_file("epoch_seconds", "inf"),
    ),
    Case(
        CLAIMS,
        2,
        "column 'epoch_seconds': must be above 0.001 and at most 1e+09, got 1e-300",
        _claims_file("epoch_seconds", "1e-300"),
    ),
    Case(
        CLAIMS,
        2,
        "column 'gpus': must be a whole number at least 1 and at most 1,000,000, got inf",
        _claims_file("gpus", "inf"),
    ),
    # Without --precision, a claim 3.9x the best published result on the A100 is not plausible.
    Case(
        ("audit", "--gpu", "a100-40gb", "--workload", "resnet50", "--samples-per-second", "8000"),
        0,
        "precision not stated: judged as mixed_float16",
    ),
    # Out of the box: an unpriced option (the RTX 5080: nobody in the catalog rents it) beside
    # priced ones is shown, not fatal; the default set is priced now, the RTX 3090 included.
    Case(("cost", "--gpu-hours", "1000"), 0, "1 x rtx-3090 (runpod)"),
    Case(
        ("cost", "--gpu-hours", "1000", "--option", "rtx-5080", "--option", "h100", "--json"),
        0,
        '"unpriced": "no on-demand price',
    ),
    Case(
        ("cost", "--gpu-hours", "1000", "--option", "rtx-5080"),
        2,
        "1 x rtx-5080 (cloud): no on-demand price for rtx-5080 in the catalog",
    ),
    # A bad option beside an unpriced one is named, not hidden by the missing price.
    Case(
        ("cost", "--gpu-hours", "1000", "--option", "rtx-5080", "--option", "h100@ibm"),
        2,
        "unknown provider 'ibm'",
    ),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
