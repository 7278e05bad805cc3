"""The shipped published training measurements: every row says where it comes from, each
source's rows stay together, and a multi-GPU row faster than linear says so (issue 18, item 6).

Why these matter: the predictions are calibrated and judged on these rows, the scaling model is
fitted to the multi-GPU ones, and leave-one-source-out accuracy needs each source to be one
block that names the exact version (commit) of its tables, so a revised table is a new row.
"""

from __future__ import annotations

import csv
import re

import pytest

from gpuscout.catalog import Catalog, Published, load_catalog
from gpuscout.catalog.catalog import data_dir

# "owner/name@commit path" (a repository file at a commit) or an http(s) URL.
REPO_AT_COMMIT = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{7,40} \S+")
URL = re.compile(r"^https?://\S+")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _file_rows() -> list[dict[str, str]]:
    with (data_dir() / "published_training.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_every_published_row_names_a_repository_commit_or_a_url() -> None:
    rows = _file_rows()
    assert rows
    for line, row in enumerate(rows, start=2):
        source = row["source"]
        assert REPO_AT_COMMIT.match(source) or URL.match(source), (
            f"published_training.csv line {line}: source {source!r} names neither "
            "owner/repo@commit path nor a URL"
        )


def test_each_source_id_is_one_contiguous_block() -> None:
    seen: list[str] = []
    for row in _file_rows():
        sid = row["source_id"]
        if seen and seen[-1] == sid:
            continue
        assert sid not in seen, f"source_id {sid!r} is split: its rows must stay together"
        seen.append(sid)
    assert len(seen) >= 6  # Lambda v0/v1/v2 and TF, NVIDIA TF and PyTorch


def _one_gpu_reference(row: Published, cat: Catalog) -> Published | None:
    """The same source's 1-GPU row for this GPU, workload, precision and software (the one at
    the same batch per GPU where the source gives several)."""
    ones = [
        r
        for r in cat.published
        if r.gpu_count == 1
        and (r.source_id, r.software, r.workload, r.seq_len, r.precision, r.gpu_id)
        == (row.source_id, row.software, row.workload, row.seq_len, row.precision, row.gpu_id)
    ]
    same_batch = [r for r in ones if r.batch_size_per_gpu == row.batch_size_per_gpu]
    return next(iter(same_batch or ones), None)


def test_super_linear_multi_gpu_rows_say_so_and_no_other_row_does(cat: Catalog) -> None:
    checked = 0
    for row in cat.published:
        if row.gpu_count == 1:
            continue
        one = _one_gpu_reference(row, cat)
        if one is None:
            continue
        checked += 1
        super_linear = row.throughput > row.gpu_count * one.throughput
        flagged = "SUPER-LINEAR" in (row.note or "")
        assert flagged == super_linear, (
            f"{row.gpu_count} x {row.gpu} {row.workload} {row.precision} ({row.source_id}): "
            f"{row.throughput:g} vs {row.gpu_count} x {one.throughput:g}"
        )
    assert checked >= 100  # the scaling fit needs many multi-GPU rows


def test_the_stale_nvidia_tf_a100_figures_are_replaced_by_the_revised_ones(cat: Catalog) -> None:
    a100 = {
        (r.precision, r.gpu_count): r.throughput
        for r in cat.published
        if r.source_id == "nvidia-dle-tf1" and r.gpu_id == "a100-40gb-sxm"
    }
    assert a100 == {
        ("fp32", 1): 909,
        ("mixed_float16", 1): 2375,
        ("fp32", 8): 7000,
        ("mixed_float16", 8): 17400,
    }


def test_every_row_gives_its_batch_per_gpu(cat: Catalog) -> None:
    """Each published row is modelled at its own batch, so a row without one cannot be."""
    missing = [
        f"{r.gpu} {r.workload} ({r.source_id})" for r in cat.published if not r.batch_size_per_gpu
    ]
    assert not missing
