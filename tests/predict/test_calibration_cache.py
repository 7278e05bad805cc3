"""The refitted calibration kept on disk (``predict/calibration_cache.py``): a hit skips the
fit and gives the same calibration field for field; anything else is fitted again.

Real fits, in process: most tests fit a dozen published points (a tenth of a second); one goes
through ``calibration_for`` with a catalog file of one GPU row, the case the cache is for (the
full fit, about two seconds). Each test has its own cache directory (the suite's is shared).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.catalog.catalog import data_dir
from gpuscout.predict import calibrate, calibration_cache
from gpuscout.predict.calibrate import Calibration, calibration_for, fit_calibration
from gpuscout.predict.calibration_points import Point, published_points


class Fitted(Exception):
    """Raised by the fitter in place of fitting: the cache was not used."""


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(calibrate, "_FITS", {})  # no fit of another test kept in memory


def _points() -> list[Point]:
    every = published_points(load_catalog())
    return every[:: len(every) // 12][:12]


def _no_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process, as far as the fit goes: nothing in memory, and fitting raises."""

    def refuse(points: Sequence[Point]) -> Calibration:
        raise Fitted

    monkeypatch.setattr(calibrate, "_FITS", {})
    monkeypatch.setattr(calibrate, "_fit", refuse)


def _same(cached: Calibration, fresh: Calibration) -> None:
    for field in dataclasses.fields(Calibration):
        if field.compare:
            assert getattr(cached, field.name) == getattr(fresh, field.name), field.name
    assert cached.points == fresh.points


def _files() -> list[Path]:
    return sorted(calibration_cache.cache_dir().glob("*.json"))


def test_a_hit_after_a_miss_does_not_fit_and_equals_a_fresh_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    points = _points()
    fresh = calibrate._fit(points)
    first = fit_calibration(points, cached=True)
    _same(first, fresh)
    assert len(_files()) == 1
    _no_fit(monkeypatch)
    _same(fit_calibration(points, cached=True), fresh)
    monkeypatch.setattr(calibrate, "_FITS", {})
    with pytest.raises(Fitted):  # only the fit every command uses is read from disk
        fit_calibration(points)


def test_a_changed_point_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any field of a point is in the key, not only its ids: a GPU row edited under the same
    id, a measured speed, the fit's revision."""
    points = _points()
    fit_calibration(points, cached=True)
    _no_fit(monkeypatch)
    fit_calibration(points, cached=True)  # a hit
    bandwidth = points[0].gpu.memory_bandwidth_gb_per_s
    gpu = points[0].gpu.model_copy(update={"memory_bandwidth_gb_per_s": 1.01 * bandwidth})
    changed = [
        [dataclasses.replace(points[0], gpu=gpu), *points[1:]],
        [*points[:-1], dataclasses.replace(points[-1], measured=points[-1].measured * 1.001)],
        points[:-1],
    ]
    for other in changed:
        with pytest.raises(Fitted):
            fit_calibration(other, cached=True)
    monkeypatch.setattr(calibrate, "FIT_REVISION", calibrate.FIT_REVISION + 1)
    monkeypatch.setattr(calibrate, "_FITS", {})  # a new revision is a new process
    with pytest.raises(Fitted):
        fit_calibration(points, cached=True)


def test_a_damaged_or_foreign_cache_file_is_fitted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    points = _points()
    fresh = fit_calibration(points, cached=True)
    (path,) = _files()
    good = json.loads(path.read_text())
    bad = [
        b"\x00\xff not json",
        path.read_bytes()[:40],
        json.dumps({**good, "key": "0" * 64}).encode(),  # another key's fit
        json.dumps({**good, "count": good["count"] + 1}).encode(),
        json.dumps({**good, "stacks": {"someone else's": 1.0}}).encode(),
        json.dumps({**good, "tensor": [-0.5, 1, 1, 1]}).encode(),
        json.dumps({**good, "power_w": float("nan")}).encode(),
        json.dumps({**good, "tensor": ["0.5", 1, 1, 1]}).encode(),
        json.dumps({**good, "extra": 1}).encode(),
        json.dumps([good]).encode(),
    ]
    for content in bad:
        path.write_bytes(content)
        monkeypatch.setattr(calibrate, "_FITS", {})
        _same(fit_calibration(points, cached=True), fresh)
        assert json.loads(path.read_text()) == good, content  # rewritten
    path.unlink()
    path.mkdir()  # not even a file: read and write both fail, the fit answers
    monkeypatch.setattr(calibrate, "_FITS", {})
    _same(fit_calibration(points, cached=True), fresh)


def test_an_unwritable_cache_still_answers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache directory cannot be made (its parent is a file: a read-only directory does
    not stop root, which the tests may run as)."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    points = _points()
    fresh = calibrate._fit(points)
    _same(fit_calibration(points, cached=True), fresh)
    assert not list(tmp_path.glob("**/*.tmp"))


def test_the_cache_keeps_the_most_recently_used_files() -> None:
    folder = calibration_cache.cache_dir()
    folder.mkdir(parents=True)
    old = [folder / f"{i:064x}.json" for i in range(calibration_cache.MAX_FILES + 3)]
    for i, path in enumerate(old):
        path.write_text("{}")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    left = [folder / f".{'1' * 64}.{pid}.tmp" for pid in (1, 2)]  # by killed writers
    for path in left:
        path.write_text("{")
    os.utime(left[0], (1_000_000, 1_000_000))  # long ago: removed; the other may be writing
    fit_calibration(_points(), cached=True)
    kept = _files()
    assert len(kept) == calibration_cache.MAX_FILES
    assert old[0] not in kept and old[3] not in kept and old[4] in kept  # oldest 4 removed
    assert not left[0].exists() and left[1].exists()


def test_a_catalog_file_costs_one_fit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What the cache is for: a catalog file with one GPU row refits the calibration; the next
    command reads it back, the same calibration, field for field."""
    with (data_dir() / "gpus.csv").open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == "rtx-4090")
    mine = tmp_path / "gpus.csv"
    with mine.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(row))
        writer.writeheader()
        writer.writerow(dict(row, fp32_tflops="80.0", source="my own deviceQuery"))
    catalog = load_catalog([str(mine)])
    fresh = calibration_for(catalog)
    assert fresh.count == len(published_points(catalog))
    _no_fit(monkeypatch)
    _same(calibration_for(catalog), fresh)
