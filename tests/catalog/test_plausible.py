"""A user's catalog row is checked against physics and against the shipped row (issue 17): a
unit typo (``memory_bandwidth_gb_per_s=1.008``, TB/s in the GB/s column) used to be accepted
and moved the fitted efficiencies from 95/80/49 % to 35/67/100 %. Impossible rows are refused
(one-line rows in tests/adversarial/test_catalog_rows.py); a possible row more than 2x from the
shipped one is a warning; and a user row never enters a calibration silently."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.catalog.catalog import data_dir
from gpuscout.catalog.plausible import FLOP_PER_BYTE, RANGES, WARN_FACTOR
from gpuscout.core.errors import UserError
from tests.conftest import run_cli, run_in_process


def _gpu_file(path: Path, gpu_id: str = "rtx-4090", **cells: str) -> Path:
    with (data_dir() / "gpus.csv").open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == gpu_id)
    row.update(cells)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(row))
        writer.writeheader()
        writer.writerow(row)
    return path


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_every_shipped_row_is_well_inside_the_ranges(cat: Catalog) -> None:
    """The ranges refuse what no GPU can be: every shipped figure has room to spare."""
    for gpu in cat.gpus.values():
        for column, rng in RANGES.items():
            value = getattr(gpu, column)
            if value:
                assert rng.low * 2 <= value <= rng.high / 1.5, (gpu.id, column, value)
        per_byte = gpu.fp32_tflops * 1e3 / gpu.memory_bandwidth_gb_per_s
        assert FLOP_PER_BYTE[0] * 3 <= per_byte <= FLOP_PER_BYTE[1] / 3, (gpu.id, per_byte)


def test_the_typo_is_refused_through_predict_before_any_fit(tmp_path: Path) -> None:
    path = _gpu_file(tmp_path / "gpus.csv", memory_bandwidth_gb_per_s="1.008")
    r = run_cli(
        "predict", "--workload", "resnet50", "--gpus", "h100", "--precision", "mixed_float16",
        "--catalog", str(path), block_tf=True,
    )  # fmt: skip
    assert r.code == 2
    assert f"{path}: line 2, column 'memory_bandwidth_gb_per_s': 1.008 is outside" in r.err
    assert "write 1008" in r.err and len(r.err.strip().splitlines()) == 1


def test_the_corrected_row_predicts_what_the_shipped_row_does(tmp_path: Path) -> None:
    """The fix the error suggests gives back the shipped figures (an H100's images/s)."""
    path = _gpu_file(tmp_path / "gpus.csv", memory_bandwidth_gb_per_s="1008")
    args = ("predict", "--workload", "resnet50", "--gpus", "h100", "--precision", "mixed_float16")
    shipped = run_cli(*args, "--json", block_tf=True)
    mine = run_cli(*args, "--json", "--catalog", str(path), block_tf=True)
    assert shipped.code == 0 and mine.code == 0, mine.err
    assert mine.json()[0]["samples_per_second"] == pytest.approx(
        shipped.json()[0]["samples_per_second"]
    )
    assert shipped.json()[0]["samples_per_second"] > 1000  # a real figure, not a refusal
    assert "warning" not in mine.err  # the same figures as shipped: nothing to warn about


def test_more_than_twice_the_shipped_row_is_a_warning_not_a_refusal(tmp_path: Path) -> None:
    path = _gpu_file(tmp_path / "gpus.csv", memory_bandwidth_gb_per_s="480", tdp_w="1000")
    r = run_cli("specs", "4090", "--catalog", str(path), block_tf=True)
    assert r.code == 0, r.err
    (warning,) = r.err.strip().splitlines()
    assert warning.startswith(f"gpuscout: warning: {path}: line 2: your rtx-4090 row differs")
    assert "memory_bandwidth_gb_per_s 480 (shipped 1008" in warning
    assert "tdp_w 1000 (shipped 450" in warning
    assert f"more than {WARN_FACTOR:g}x" in warning
    near = _gpu_file(tmp_path / "near.csv", memory_bandwidth_gb_per_s="900")
    assert run_cli("specs", "4090", "--catalog", str(near), block_tf=True).err == ""


def test_predict_and_calibrate_name_the_user_rows_they_use(tmp_path: Path) -> None:
    path = _gpu_file(tmp_path / "gpus.csv", fp32_tflops="80.0", source="my deviceQuery")
    line = f"your catalog {path} replaces the shipped row of rtx-4090, under "
    predicted = run_cli(
        "predict", "--workload", "resnet50", "--gpus", "h100", "--json", "--catalog", str(path),
        block_tf=True,
    )  # fmt: skip
    assert predicted.code == 0, predicted.err
    assert any(n.startswith(line) for n in predicted.json()[0]["common_assumptions"])
    calibrated = run_cli("calibrate", "--json", "--catalog", str(path), block_tf=True)
    assert calibrated.code == 0, calibrated.err
    assert [n for n in calibrated.json()["user_catalog"] if n.startswith(line)]
    shown = run_cli("calibrate", "--catalog", str(path), block_tf=True)
    assert "replaces the shipped row of rtx-4090" in shown.out
    assert "user_catalog" in run_cli("calibrate", "--json", block_tf=True).out  # [] without one
    assert "your catalog" not in run_cli("calibrate", block_tf=True).out
    advised = run_in_process(
        "advise", "--workload", "resnet50", "--epochs", "1", "--json", "--catalog", str(path)
    )
    assert advised.code == 0, advised.err
    assert any(a.startswith(line) for a in json.loads(advised.out)["assumptions"])


def test_published_rows_of_a_user_file_are_named_too(tmp_path: Path) -> None:
    with (data_dir() / "published_training.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["gpu_id"] == "rtx-4090"][:1]
    path = tmp_path / "published.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows([dict(r, source_id="mine") for r in rows])
    r = run_cli("calibrate", "--json", "--catalog", str(path), block_tf=True)
    assert r.code == 0, r.err
    assert r.json()["user_catalog"] == [
        f"your catalog {path} brings 1 published measurement into the fit (rtx-4090)"
    ]


def test_the_shipped_catalog_loads_without_warnings(cat: Catalog) -> None:
    assert cat.warnings == [] and cat.overrides == {}


def test_a_check_names_file_line_column_and_range(tmp_path: Path) -> None:
    path = _gpu_file(tmp_path / "gpus.csv", "h100-sxm", memory_gb="81920")
    with pytest.raises(UserError) as err:
        load_catalog([str(path)])
    assert err.value.problem == (
        f"{path}: line 2, column 'memory_gb': 81920 is outside 1..1,000 GB for h100-sxm."
    )
    assert err.value.fix == "81920 looks like MiB; the column is GB: write 80."


def test_an_l2_size_in_kb_is_refused_with_the_fix(tmp_path: Path) -> None:
    """deviceQuery prints L2 in bytes and whitepapers in KB; the column is MB."""
    path = _gpu_file(tmp_path / "gpus.csv", "a100-40gb-sxm", l2_cache_mb="40960")
    with pytest.raises(UserError) as err:
        load_catalog([str(path)])
    assert "column 'l2_cache_mb': 40960 is outside 0.25..1,024 MB" in err.value.problem
    assert err.value.fix == "40960 looks like KB; the column is MB: write 40."
    path = _gpu_file(tmp_path / "gpus.csv", "a100-40gb-sxm", l2_cache_mb="41943040")
    with pytest.raises(UserError) as err:
        load_catalog([str(path)])
    assert err.value.fix == "41943040 looks like bytes; the column is MB: write 40."
    assert load_catalog([str(_gpu_file(tmp_path / "ok.csv", l2_cache_mb=""))]).gpus["rtx-4090"]
