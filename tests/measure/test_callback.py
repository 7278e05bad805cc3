"""``gpuscout.keras.ScoutCallback`` in a real ``model.fit`` on the CPU."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import keras
import numpy as np
import pytest

from gpuscout.keras import ScoutCallback
from gpuscout.store import Store


def _model() -> keras.Model:
    model = keras.Sequential(
        [keras.Input((20,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def test_the_callback_stores_a_run_from_a_real_fit_and_predicts_other_gpus(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((2048, 20), dtype=np.float32), rng.integers(0, 3, 2048)
    printed: list[str] = []
    db = tmp_path / "runs.sqlite"
    cb = ScoutCallback(batch_size=32, db=db, predict_on=("h100-sxm",), print_fn=printed.append)
    _model().fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[cb])
    assert cb.result is not None and cb.result.status == "ok"
    assert len(cb.times) == 2 * 2048 // 32  # every batch of both epochs
    assert cb.result.warmup is not None
    assert cb.result.measured_steps + cb.result.warmup.steps == len(cb.times)
    with Store(db) as store:
        stored = store.get(cb.result.id or 0)
    assert stored.loop == "fit" and stored.batch_size == 32
    assert stored.monitor is not None and stored.step_times_s == cb.times
    sps = stored.samples_per_second
    assert sps is not None and sps.ci_low is not None and sps.ci_low <= sps.median
    text = printed[0]
    assert "samples/s [95% CI" in text and f"stored as run {cb.result.id}" in text
    assert "H100" in text and len(cb.predictions) == 1


def test_without_a_batch_size_it_reports_steps_and_can_keep_nothing(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((256, 20), dtype=np.float32), rng.integers(0, 3, 256)
    printed: list[str] = []
    cb = ScoutCallback(store=False, predict_on=(), print_fn=printed.append)
    _model().fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    assert cb.result is not None and cb.result.id is None
    assert "steps/s" in printed[0]


def test_without_a_batch_size_the_stored_run_has_no_samples_per_second(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((512, 20), dtype=np.float32), rng.integers(0, 3, 512)
    printed: list[str] = []
    db = tmp_path / "runs.sqlite"
    model = _model()
    cb = ScoutCallback(db=db, predict_on=("h100-sxm",), print_fn=printed.append)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    assert cb.result is not None and cb.result.id is not None
    with Store(db) as store:
        stored = store.get(cb.result.id)
        listed = store.list()[0]
    assert stored.workload == stored.config.workload == f"fit:{model.name}"
    assert stored.config.batch_size is None and stored.batch_size == 0
    assert stored.samples_per_second is None and listed.samples_per_second is None
    assert "steps/s [95% CI" in printed[0] and "samples/s" not in printed[0].splitlines()[0]


def test_a_store_that_refuses_the_write_is_printed_and_training_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database opens but refuses the insert, as a full disk or a lock would (here a
    trigger, planted in the real SQLite file, aborts every insert); the run is kept in a file
    in the current folder."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "runs.sqlite"
    Store(db).close()  # created and migrated
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON runs "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    conn.commit()
    conn.close()
    rng = np.random.default_rng(0)
    x, y = rng.random((256, 20), dtype=np.float32), rng.integers(0, 3, 256)
    printed: list[str] = []
    cb = ScoutCallback(batch_size=16, db=db, predict_on=(), print_fn=printed.append)
    history = _model().fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    assert len(history.history["loss"]) == 1  # fit returned normally
    assert cb.result is not None and cb.result.status == "ok" and cb.result.id is None
    assert "samples/s [95% CI" in printed[0]
    assert (
        f"gpuscout: the run was not stored: cannot write to the database '{db}': "
        "database or disk is full; the run was kept in " in printed[0]
    )
    (kept,) = tmp_path.glob("gpuscout-unsaved-run-*.json")
    assert str(kept) in printed[0] and f"gpuscout runs import {kept}" in printed[0]
    with Store(db) as store:
        assert store.list() == []
