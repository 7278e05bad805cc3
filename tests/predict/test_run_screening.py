"""Stored runs entering calibration are screened against the published rows' own fit: a bogus
run (an import 1,000x off) once joined the fit and moved every prediction from its store by
18 %, unwarned. Real catalog, real fit, real store: left out, named, and predictions unchanged."""

from __future__ import annotations

from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict.calibration_points import run_points, screen_factor
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.store import Store
from tests.cli.test_one_prediction import _a100_run
from tests.conftest import run_in_process


def _speeds(db: Path | None) -> dict[str, float]:
    model = session(load_catalog(), db if db is not None else Path("/nonexistent/none.sqlite"))
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    gpus = [model.catalog.gpus[g] for g in ("h100-sxm", "a100-40gb-sxm", "l4")]
    rows, _ = model.predict(profile, gpus)
    return {r.gpu: r.samples_per_second for r in rows}


def test_the_screen_is_twice_the_widest_band() -> None:
    assert 2.5 < screen_factor() < 4  # x3 today; the model's widest band is about x1.5


def test_a_bogus_run_is_left_out_named_and_predictions_do_not_move(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with Store(db, announce=False) as store:
        store.save(_a100_run(2_500_000.0))  # 1,000x a real A100's ResNet-50
    model = session(load_catalog(), db)
    assert model.run_ids == ()
    note = next(n for n in model.notes if n.startswith("not in the calibration: your run 1 "))
    assert "2.5e+06 samples/s" in note and "x off" in note and "a100-40gb-sxm" in note
    assert _speeds(db) == _speeds(None)  # exactly the published rows' own predictions
    out = run_in_process("calibrate", "--db", str(db))
    assert out.code == 0 and "not in the calibration: your run 1 " in out.out + out.err


def test_a_plausible_run_still_joins_the_fit_and_one_over_100_percent_mfu_does_not() -> None:
    catalog = load_catalog()
    good = _a100_run().model_copy(update={"id": 1})
    points, notes = run_points([good], catalog)
    assert [p.run_id for p in points] == [1] and notes == []  # the screen keeps a real run
    hot = _a100_run().model_copy(update={"id": 2, "mfu": 1.4})
    points, notes = run_points([hot], catalog)
    assert points == [] and notes == [
        "not in the calibration: your run 2 (resnet50: its MFU is 140%, above 100 %: its peak "
        "or its figures are wrong)"
    ]
