"""Rows for a date in the future and a repeated fact in every other kind of user catalog file
(issue 31; the GPU and price versions are in ``test_contradiction_rows.py``): published
throughput rows, measured NCCL bandwidths and SkyPilot catalogs. A SkyPilot file has no date
column: its prices are dated by the file's modification time. Each is one line, exit 2."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuscout.catalog.catalog import data_dir
from tests.adversarial.table import Case, cases, run_case

PUBLISHED_HEADER = (data_dir() / "published_training.csv").read_text().splitlines()[0] + "\n"
PUBLISHED = "me-1,me,keras,,resnet50,,fp32,RTX 4090,rtx-4090,1,64,{tput},images/s,,{date}\n"
FUTURE_PUBLISHED = PUBLISHED_HEADER + PUBLISHED.format(tput=900, date="2099-01-01")
DUPLICATE_PUBLISHED = PUBLISHED_HEADER + (
    PUBLISHED.format(tput=900, date="2026-01-01") + PUBLISHED.format(tput=950, date="2026-01-01")
)
BUSBW_HEADER = "gpu_id,link,gpu_count,collective,busbw_gb_per_s,note,source,retrieved_on\n"
BUSBW = "a100-80gb-sxm,nvlink,{n},all_reduce,190,,ours,{date}\n"
FUTURE_BUSBW = BUSBW_HEADER + BUSBW.format(n=8, date="2099-01-01")
DUPLICATE_BUSBW = (
    BUSBW_HEADER + BUSBW.format(n=8, date="2026-01-01") + (BUSBW.format(n=4, date="2026-01-01"))
)
SKY_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,Region,SpotPrice,Price\n"
SKY_ROW = "p5.48xlarge,H100,8.0,us-east-1,,{price}\n"
YEAR_2099 = 4_070_952_000  # 2099-01-01 at noon UTC (that day in every time zone), as an mtime


def _skypilot(text: str, mtime: float | None = None) -> Callable[[Path], None]:
    """Write ``aws/vms.csv`` (SkyPilot's layout: the folder is the provider) in a row's folder,
    modified at ``mtime`` when given."""

    def setup(tmp: Path) -> None:
        path = tmp / "aws" / "vms.csv"
        path.parent.mkdir()
        path.write_text(text)
        if mtime is not None:
            os.utime(path, (mtime, mtime))

    return setup


SKY = ("prices", "--catalog", "{tmp}/aws/vms.csv")

CASES = [
    # published training throughput
    Case(("specs", "4090", "--catalog", "{tmp}/pub.csv"), 2,
         "line 2, column 'retrieved_on': 2099-01-01 is in the future",
         files={"pub.csv": FUTURE_PUBLISHED}),
    Case(("calibrate", "--catalog", "{tmp}/pub.csv"), 2,
         "lines 2 and 3 both give me-1's keras resnet50 throughput on 1 x rtx-4090 in fp32",
         files={"pub.csv": DUPLICATE_PUBLISHED}),
    # measured NCCL bus bandwidth
    Case(("specs", "a100-80gb-sxm", "--catalog", "{tmp}/bw.csv"), 2,
         "line 2, column 'retrieved_on': 2099-01-01 is in the future",
         files={"bw.csv": FUTURE_BUSBW}),
    Case(("specs", "a100-80gb-sxm", "--catalog", "{tmp}/bw.csv"), 2,
         "lines 2 and 3 both give the nvlink bus bandwidth of a100-80gb-sxm",
         files={"bw.csv": DUPLICATE_BUSBW}),
    # SkyPilot catalogs
    Case(SKY, 2, "vms.csv: the file was modified on 2099-01-01, in the future",
         setup=_skypilot(SKY_HEADER + SKY_ROW.format(price=55), mtime=YEAR_2099)),
    Case(("cost", "--gpu-hours", "10", *SKY[1:]), 2,
         "vms.csv: lines 2 and 3 both give InstanceType p5.48xlarge, AcceleratorName H100, "
         "AcceleratorCount 8.0, Region us-east-1, at different prices",
         setup=_skypilot(SKY_HEADER + SKY_ROW.format(price=55) + SKY_ROW.format(price=50))),
    Case(SKY, 0, "h100-sxm",  # the same row twice is SkyPilot's layout (a row per zone)
         setup=_skypilot(SKY_HEADER + SKY_ROW.format(price=55) + SKY_ROW.format(price=55))),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
