"""Stored runs are screened against the published rows' own model before they anchor: a bogus
run (an import 1,000x off) would otherwise scale every GPU's prediction by 1,000. Real catalog,
real fit, real store: left out, named, and predictions unchanged."""

from __future__ import annotations

from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.predict.uncertainty import screen_factor
from gpuscout.store import Store
from tests.cli.test_one_prediction import _a100_run
from tests.conftest import run_in_process


def _speeds(db: Path | None) -> tuple[dict[str, float], list[str]]:
    model = session(load_catalog(), db if db is not None else Path("/nonexistent/none.sqlite"))
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    gpus = [model.catalog.gpus[g] for g in ("h100-sxm", "a100-40gb-sxm", "l4")]
    rows, notes = model.predict(profile, gpus)
    return {r.gpu: r.samples_per_second for r in rows}, notes


def test_the_screen_is_twice_the_widest_band() -> None:
    assert 2.5 < screen_factor() < 4  # x3 today; the model's widest band is about x1.5


def test_a_bogus_run_is_left_out_named_and_predictions_do_not_move(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with Store(db, announce=False) as store:
        store.save(_a100_run(2_500_000.0))  # 1,000x a real A100's ResNet-50
    speeds, notes = _speeds(db)
    note = next(n for n in notes if n.startswith("not an anchor: your run 1 "))
    assert "2.5e+06 samples/s" in note and "x off" in note and "a100-40gb-sxm" in note
    assert speeds == _speeds(None)[0]  # exactly the published rows' own predictions
    out = run_in_process(
        "predict", "--workload", "resnet50", "--gpus", "a100-40gb-sxm", "--db", str(db)
    )
    assert out.code == 0 and "not an anchor: your run 1 " in " ".join(out.out.split())


def test_a_plausible_run_anchors_and_one_over_100_percent_mfu_does_not(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with Store(db, announce=False) as store:
        store.save(_a100_run())
        store.save(_a100_run(2_400.0).model_copy(update={"mfu": 1.4}))
    speeds, notes = _speeds(db)
    assert speeds["a100-40gb-sxm"] == 2_500.0  # run 1, measured: the screen keeps a real run
    assert any(n.startswith("anchored on your stored run 1: a100-40gb-sxm") for n in notes)
    assert (
        "not an anchor: your run 2 (its MFU is 140%, above 100 %: its peak or its figures "
        "are wrong)" in session(load_catalog(), db).notes
    )
