"""``gpuscout calibrate`` says, per published row, the batch the source ran and the batch the
model runs it at: they often differ (a source's batch 1280 is modelled at the profile's 256)."""

from __future__ import annotations

from gpuscout.catalog import load_catalog
from gpuscout.predict.calibration_points import published_points
from tests.conftest import run_cli


def test_each_published_point_carries_the_batch_measured_and_the_batch_modelled() -> None:
    catalog = load_catalog()
    points = published_points(catalog)
    by_label = {p.label: p for p in points}
    v100 = by_label["V100 16GB resnet50 fp32 (lambda-pt-v1)"]
    assert (v100.measured_batch, v100.modelled_batch) == (128, 128)  # its own batch
    for p in points:
        row = next(
            r for r in catalog.published if f"{r.gpu} {r.workload} {r.precision} ({r.source_id})"
            == p.label and r.throughput == p.measured
        )  # fmt: skip
        assert p.measured_batch == row.batch_size_per_gpu
        # each row at its own batch (the shipped profile rescaled), the profile's where the
        # source states none
        default = 256 if p.workload == "resnet50" else 32
        assert p.modelled_batch == (row.batch_size_per_gpu or default)
        assert p.profile.batch == p.modelled_batch


def test_calibrate_prints_both_batches_per_row() -> None:
    out = run_cli("calibrate", "--json", block_tf=True)
    assert out.code == 0, out.err
    rows = {r["point"]: r for r in out.json()["points"]}
    v100 = rows["V100 16GB resnet50 fp32 (lambda-pt-v1)"]
    assert (v100["measured_batch"], v100["modelled_batch"]) == (128, 128)
    text = run_cli("calibrate", block_tf=True)
    assert text.code == 0, text.err
    line = next(x for x in text.out.splitlines() if "V100 16GB resnet50 fp32 (lambda-pt-v1)" in x)
    assert [c.strip() for c in line.split("│")[2:4]] == ["128", "128"]
    assert "each published row is modelled at its own batch per GPU" in text.out
