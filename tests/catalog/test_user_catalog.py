"""The user's own catalog files: override and add rows, bring SkyPilot prices, and get an
exact one-line error for a bad cell."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.catalog.catalog import data_dir
from gpuscout.core.errors import UserError


def _shipped_row(gpu_id: str) -> dict[str, str]:
    with (data_dir() / "gpus.csv").open(newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"] == gpu_id)


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_a_user_row_replaces_the_shipped_row_and_adds_new_gpus(tmp_path: Path) -> None:
    mine = dict(_shipped_row("rtx-4090"), fp32_tflops="80.0", source="my own deviceQuery")
    new = dict(
        _shipped_row("rtx-4090"),
        id="rtx-4080",
        name="GeForce RTX 4080",
        aliases="4080;rtx 4080",
        fp32_tflops="48.7",
        tf32_tensor_tflops="48.7",
        source="my notes",
    )
    path = _write(tmp_path / "gpus.csv", [mine, new])
    cat = load_catalog([str(path)])
    assert cat.gpus["rtx-4090"].fp32_tflops == 80.0
    assert cat.gpus["rtx-4090"].source == "my own deviceQuery"
    assert cat.origin["rtx-4090"] == str(path)
    assert cat.resolve("4080").gpu.fp32_tflops == 48.7
    assert load_catalog().gpus["rtx-4090"].fp32_tflops == 82.6  # the package is untouched


def test_environment_variable_adds_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = {
        "gpu_id": "rtx-4090",
        "provider": "my-shop",
        "kind": "purchase_used",
        "usd_per_gpu": "1100",
        "source": "a quote",
        "retrieved_on": "2026-11-30",
    }
    path = _write(tmp_path / "prices.csv", [row])
    monkeypatch.setenv("GPUSCOUT_CATALOG", str(path))
    cat = load_catalog()
    assert [p.usd_per_gpu for p in cat.prices_for("rtx-4090") if p.provider == "my-shop"] == [1100]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("fp32_tflops", "fast", "line 2, column 'fp32_tflops': Input should be a valid number"),
        ("retrieved_on", "yesterday", "line 2, column 'retrieved_on'"),
        ("market", "gaming", "line 2, column 'market'"),
        ("source", "", "line 2, column 'source'"),
        ("fp16_tensor_fp32acc_tflops", "400", "line 2: fp16_tensor_fp32acc_tflops is above"),
    ],
)
def test_a_bad_cell_names_file_line_and_column(
    tmp_path: Path, column: str, value: str, message: str
) -> None:
    path = _write(tmp_path / "gpus.csv", [dict(_shipped_row("rtx-4090"), **{column: value})])
    with pytest.raises(UserError) as err:
        load_catalog([str(path)])
    text = err.value.one_line()
    assert text.startswith(f"{path}: {message}")
    assert "\n" not in text


def test_unknown_column_and_unknown_gpu_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.csv", [dict(_shipped_row("t4"), fp32_tflop="8")])
    with pytest.raises(
        UserError, match=re.escape("unknown column 'fp32_tflop'. Did you mean 'fp32_tflops'")
    ):
        load_catalog([str(path)])
    row = {
        "gpu_id": "rtx4090",
        "provider": "x",
        "kind": "on_demand",
        "usd_per_gpu_hour": "0.5",
        "source": "s",
        "retrieved_on": "2026-11-30",
    }
    prices = _write(tmp_path / "p.csv", [row])
    with pytest.raises(UserError, match="line 2, column 'gpu_id': 'rtx4090' is not in the catalog"):
        load_catalog([str(prices)])
    with pytest.raises(UserError, match="does not exist"):
        load_catalog([str(tmp_path / "missing.csv")])


def test_skypilot_catalog_prices_per_gpu(tmp_path: Path) -> None:
    folder = tmp_path / "runpod"
    folder.mkdir()
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Region,SpotPrice,Price"
    lines = [
        header,
        "1x_RTX4090_SECURE,RTX4090,1.0,16,62,US,0.45,0.69",
        "1x_RTX4090_SECURE,RTX4090,1.0,16,62,US,0.45,0.69",  # another zone: same price row
        "4x_A100_SECURE,A100,4.0,32,320,US,,6.00",
        "1x_H100_SECURE,H100,1.0,16,80,US,,2.39",  # RunPod's "H100" is the PCIe part
        "1x_L40S_SECURE,L40S,1.0,12,62,US,0.86,0.43",  # spot above on-demand: swapped columns
        "1x_K80,K80,1.0,4,16,US,,0.10",
        "cpu_4x,,,4,16,US,,0.20",
    ]
    (folder / "vms.csv").write_text("\n".join(lines) + "\n")
    aws = tmp_path / "aws"
    aws.mkdir()
    (aws / "vms.csv").write_text(f"{header}\np5.48xlarge,H100,8.0,192,2048,us-east-1,,55.04\n")
    cat = load_catalog([str(folder), str(aws)])
    mine = [p for p in cat.prices if p.source.startswith("SkyPilot")]
    got = {(p.gpu_id, p.kind, p.usd_per_gpu_hour, p.provider) for p in mine}
    assert got == {
        ("rtx-4090", "on_demand", 0.69, "runpod"),
        ("rtx-4090", "spot", 0.45, "runpod"),
        ("a100-40gb-sxm", "on_demand", 1.5, "runpod"),
        ("h100-pcie", "on_demand", 2.39, "runpod"),
        ("h100-sxm", "on_demand", 6.88, "aws"),
    }
    assert cat.skipped == {"K80": 1, "L40S (spot above on-demand)": 1}


def test_rows_written_as_csv_load_back_identical(tmp_path: Path) -> None:
    """``specs --csv`` output is a valid user catalog: every shipped row survives the trip."""
    shipped = load_catalog().gpus
    rows = [g.to_csv_row() for g in shipped.values()]
    path = _write(tmp_path / "copy.csv", rows)
    again = load_catalog([str(path)]).gpus
    assert again == shipped


def test_a_measured_nccl_bandwidth_of_your_own_replaces_the_shipped_one(tmp_path: Path) -> None:
    from gpuscout.predict import scaling

    row = {
        "gpu_id": "a100-80gb-sxm",
        "link": "nvlink",
        "gpu_count": "8",
        "collective": "all_reduce",
        "busbw_gb_per_s": "190",
        "note": "our DGX, nccl-tests all_reduce_perf -b 1G",
        "source": "our cluster, 2026-11-30",
        "retrieved_on": "2026-11-30",
    }
    path = _write(tmp_path / "busbw.csv", [row])
    gpu = load_catalog().gpus["a100-80gb-sxm"]
    shipped = scaling.link(gpu, 8, catalog=load_catalog())
    mine = scaling.link(gpu, 8, catalog=load_catalog([str(path)]))
    assert shipped.busbw_gb_per_s == 230.0 and "reference research" in shipped.assumption
    assert mine.busbw_gb_per_s == 190.0 and "our cluster, 2026-11-30" in mine.assumption
    bad = _write(tmp_path / "bad.csv", [dict(row, gpu_count="1")])
    with pytest.raises(UserError, match=r"bad.csv: line 2, column 'gpu_count'"):
        load_catalog([str(bad)])


def test_a_gpu_without_board_power_prints_the_power_assumed(tmp_path: Path) -> None:
    """The energy of a user's GPU row without tdp_w uses one stated default, never silently.

    In this process: a catalog file with a GPU row makes every command refit the calibration
    (about 10 s of least squares, kept for the process), so two fresh interpreters paid it
    twice. That these commands run without TensorFlow is checked with it blocked by
    tests/catalog/test_plausible.py (with a catalog file), tests/cli/test_cost_cli.py and
    tests/cli/test_advise_cli.py."""
    from gpuscout.catalog.models import ASSUMED_TDP_W
    from tests.conftest import run_in_process

    path = _write(tmp_path / "gpus.csv", [dict(_shipped_row("rtx-4090"), tdp_w="")])
    said = f"rtx-4090: no board power (tdp_w) in its catalog row: {ASSUMED_TDP_W:g} W assumed"
    cost = run_in_process(
        "cost", "--gpu-hours", "100", "--option", "rtx-4090=0.5", "--catalog", str(path), "--json"
    )
    assert cost.code == 0, cost.err
    (option,) = cost.json()["options"]
    assert any(said in note for note in option["notes"])
    work = option["hours"] - option["startup_hours"]  # a rental's start-up draws nothing counted
    assert option["energy_kwh"] == pytest.approx(work * ASSUMED_TDP_W * 0.8 / 1000)
    advice = run_in_process(
        "advise", "--workload", "resnet50", "--epochs", "10", "--catalog", str(path), "--json"
    )
    assert advice.code == 0, advice.err
    assert any(said in note for note in advice.json()["assumptions"])
    shipped = run_in_process("advise", "--workload", "resnet50", "--epochs", "10", "--json")
    assert shipped.code == 0, shipped.err
    assert not any("no board power" in n for n in shipped.json()["assumptions"])
