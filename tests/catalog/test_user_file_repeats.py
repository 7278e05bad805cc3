"""Published, NCCL bandwidth and SkyPilot files a user brings are held to the rules of their
GPU and price files (issue 31): two rows giving one fact are refused naming both lines, and a
SkyPilot file dated in the future (by its modification time: it has no date column) is refused.
Rows that only look alike (two sources, two zones, a repeat of SkyPilot's layout) still load."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.catalog.catalog import data_dir
from gpuscout.core.errors import UserError

PUBLISHED_HEADER = (data_dir() / "published_training.csv").read_text().splitlines()[0]
PUBLISHED_ROW = "{src},me,keras,,resnet50,,fp32,RTX 4090,rtx-4090,1,64,{tput},images/s,,2026-01-01"
BUSBW_HEADER = "gpu_id,link,gpu_count,collective,busbw_gb_per_s,note,source,retrieved_on"
SKY_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,Region,AvailabilityZone,SpotPrice,Price"


def _file(path: Path, header: str, *rows: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join((header, *rows)) + "\n")
    return str(path)


def test_one_sources_figure_twice_is_refused_and_two_sources_load(tmp_path: Path) -> None:
    twice = _file(
        tmp_path / "twice.csv", PUBLISHED_HEADER,
        PUBLISHED_ROW.format(src="me-1", tput=900), PUBLISHED_ROW.format(src="me-1", tput=950),
    )  # fmt: skip
    with pytest.raises(UserError) as err:
        load_catalog([twice])
    assert (
        f"{twice}: lines 2 and 3 both give me-1's keras resnet50 throughput on 1 x rtx-4090 "
        "in fp32, batch 64." in str(err.value)
    )
    assert "tell them apart by source_id" in str(err.value)
    two = _file(
        tmp_path / "two.csv", PUBLISHED_HEADER,
        PUBLISHED_ROW.format(src="me-1", tput=900), PUBLISHED_ROW.format(src="me-2", tput=950),
    )  # fmt: skip
    mine = [p for p in load_catalog([two]).published if p.source_id.startswith("me-")]
    assert [p.throughput for p in mine] == [900, 950]


def test_two_bandwidths_for_one_gpu_and_link_are_refused(tmp_path: Path) -> None:
    """The scaling model reads one figure per GPU and link, whatever the GPU count."""
    rows = [f"a100-80gb-sxm,nvlink,{n},all_reduce,{n * 25},,ours,2026-11-30" for n in (8, 4)]
    path = _file(tmp_path / "busbw.csv", BUSBW_HEADER, *rows)
    with pytest.raises(UserError, match=r"lines 2 and 3 both give the nvlink bus bandwidth of "):
        load_catalog([path])
    pcie = _file(tmp_path / "ok.csv", BUSBW_HEADER, rows[0], rows[1].replace("nvlink", "pcie"))
    assert len([b for b in load_catalog([pcie]).busbw if b.source == "ours"]) == 2


def test_a_skypilot_instance_at_two_prices_is_refused_and_repeats_or_zones_load(
    tmp_path: Path,
) -> None:
    row = "p5.48xlarge,H100,8.0,us-east-1,us-east-1a,20.0,55.04"
    other_zone = row.replace("us-east-1a", "us-east-1b").replace("20.0", "21.0")
    fine = _file(tmp_path / "a" / "aws" / "vms.csv", SKY_HEADER, row, row, other_zone)
    spot = {p.usd_per_gpu_hour for p in load_catalog([fine]).prices if p.kind == "spot"}
    assert spot >= {2.5}  # the zones are one region's rows: the first zone's price is read
    bad = _file(tmp_path / "b" / "aws" / "vms.csv", SKY_HEADER, row, row.replace("55.04", "50"))
    with pytest.raises(UserError) as err:
        load_catalog([bad])
    assert str(err.value).startswith(
        f"{bad}: lines 2 and 3 both give InstanceType p5.48xlarge, AcceleratorName H100, "
        "AcceleratorCount 8.0, Region us-east-1, AvailabilityZone us-east-1a, at different prices."
    )


def test_a_skypilot_file_modified_in_the_future_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path / "aws" / "vms.csv", SKY_HEADER, "p5.48xlarge,H100,8.0,us-east-1,,,55")
    today = dt.date.today()
    tomorrow = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(12)).timestamp()
    os.utime(path, (tomorrow, tomorrow))  # a day of clock skew is allowed
    assert any(p.source.endswith(path) for p in load_catalog([path]).prices)
    later = dt.datetime.combine(today + dt.timedelta(days=3), dt.time(12))
    os.utime(path, (later.timestamp(), later.timestamp()))
    with pytest.raises(UserError) as err:
        load_catalog([str(tmp_path / "aws")])  # another path: load_catalog caches by paths
    assert str(err.value).startswith(
        f"{path}: the file was modified on {later.date().isoformat()}, in the future (today is "
        f"{today.isoformat()})"
    )
