"""The one prediction session: which stored runs it reads and anchors on, what it says about
them, and that its single-GPU and multi-GPU answers are ``predict``'s own (a real store, no
mocks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.records import Interval
from gpuscout.predict.profile import cached
from gpuscout.predict.scaling import machines_for
from gpuscout.predict.session import session, stored_runs
from gpuscout.store import Store
from tests.cli.test_one_prediction import _a100_run
from tests.report.runs import _run


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A CPU run, the A100 ResNet-50 run, and a GPU run whose interval no measurement gives."""
    path = tmp_path / "s.sqlite"
    impossible = _a100_run().model_copy(
        update={"samples_per_second": Interval(median=2_000.0, ci_low=2_100.0, ci_high=2_200.0)}
    )
    with Store(path) as store:
        store.save_many([_run(), _a100_run(), impossible])
    return path


def test_only_successful_gpu_runs_are_read_and_anchor(db: Path) -> None:
    assert [r.id for r in stored_runs(db)] == [3, 2]  # newest first; the CPU run is not read
    with Store(db, readonly=True) as store:  # an open store reads the same
        assert [r.id for r in stored_runs(store)] == [3, 2]
    model = session(load_catalog(), db)
    assert model.run_ids == (2,) and [r.id for r in model.runs] == [2]
    assert model.notes == [
        "not an anchor: your run 3 (field 'samples_per_second': ci_low 2100 is above the "
        "median 2000)"
    ]
    assert model.calibration == session(load_catalog()).calibration  # runs are not fitted to
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    assert model.anchors(profile).run_ids == (2,)
    assert stored_runs(db.parent / "none.sqlite") == []  # no database: the catalog alone
    alone = session(load_catalog(), db.parent / "none.sqlite")
    assert alone.run_ids == () and not any("your" in n for n in alone.notes)


def test_one_gpu_and_several_are_predicts_own(db: Path) -> None:
    model = session(load_catalog(), db)
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    h100, a100 = model.catalog.gpus["h100-sxm"], model.catalog.gpus["a100-40gb-sxm"]
    rows, _ = model.predict(profile, [h100, a100], [1, 8, (2, 8)])
    by = {(r.gpu, r.nodes, r.count): r for r in rows}
    assert model.option(profile, h100).samples_per_second == by["h100-sxm", 1, 1].samples_per_second
    eight = model.option(profile, a100, 8)
    assert eight.scaling_efficiency == by["a100-40gb-sxm", 1, 8].scaling_efficiency
    # more GPUs than one machine holds: machines of equal size, as advise ranks them
    assert machines_for(h100, 16) == (2, 8)
    assert model.option(profile, h100, 16).samples_per_second == pytest.approx(
        by["h100-sxm", 2, 16].samples_per_second
    )
    # what the stored run measured stands beside its prediction
    assert by["a100-40gb-sxm", 1, 1].measured == 2_500.0
