"""``gpuscout.keras.ScoutCallback`` in a real ``model.fit`` on the CPU."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np

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
