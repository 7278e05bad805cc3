"""``gpuscout.keras.ScoutCallback`` in a real ``model.fit`` on the CPU."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest

from gpuscout.keras import ScoutCallback
from gpuscout.measure.backends.keras.callback import FitTimer
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
    assert cb.losses.steps == len(cb.times) and cb.losses.verdict() is None  # its loss fell
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


def _data(samples: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((samples, 20), dtype=np.float32), rng.integers(0, 3, samples)


def _fit_with(steps_per_execution: int, fit_kwargs: dict[str, Any], timer: FitTimer,
              optimizer: Any = "adam") -> keras.Model:  # fmt: skip
    model = _model()
    model.compile(optimizer=optimizer, steps_per_execution=steps_per_execution,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
    model.fit(epochs=3, verbose=0, callbacks=[timer], **fit_kwargs)
    return model


def _tf_data(samples: int, unknown_length: bool = False, repeat: bool = False) -> Any:
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(_data(samples)).batch(32)
    if unknown_length:  # a filter hides the length: Keras learns it only by running out
        ds = ds.filter(lambda x, y: True)
    return ds.repeat() if repeat else ds


def _assert_counts_and_rate(timer: FitTimer, steps_run: int, batch: int = 32) -> None:
    """Every step Keras ran is counted once, and the rate is the steps counted x the batch
    over the time measured (compared as counts and sums, never as a speed)."""
    r = timer.result
    assert r is not None and r.status == "ok", r and r.message
    assert len(timer.times) == steps_run  # one time per step, not per callback
    assert r.warmup is not None and r.step_time_s is not None
    assert r.measured_steps + r.warmup.steps == steps_run == len(r.step_times_s)
    measured = timer.times[r.warmup.steps :]
    assert len(measured) == r.measured_steps
    assert r.step_time_s.mean == pytest.approx(sum(measured) / r.measured_steps)
    assert r.mean_samples_per_second == pytest.approx(batch * r.measured_steps / sum(measured))
    sps = r.samples_per_second
    assert sps is not None and sps.median == pytest.approx(batch / r.step_time_s.median)
    assert sum(timer.times) == pytest.approx(sum(timer.durations))  # no time made or lost
    assert sum(timer.steps) == steps_run
    # warm-up is cut between executions: the steps before it are whole executions
    boundaries = {sum(timer.steps[:i]) for i in range(len(timer.steps) + 1)}
    assert r.warmup.steps in boundaries


@pytest.mark.parametrize(
    ("samples", "steps_per_epoch"),
    [(256, 8), (320, 10)],  # batches an epoch: 2 executions of 4 steps (and one of 2)
    ids=["multiple-of-4", "not-a-multiple-of-4"],
)
def test_steps_per_execution_counts_every_step_not_every_callback(
    samples: int, steps_per_epoch: int
) -> None:
    """Compiled with steps_per_execution=4, Keras calls back once per execution of up to 4
    steps (10 batches: 3 calls, the last after 2 steps). Every batch is counted, as many as
    with steps_per_execution=1 (counts only: never a speed) and as the optimizer took."""
    x, y = _data(samples)
    printed: list[str] = []
    cb = ScoutCallback(batch_size=32, store=False, predict_on=(), print_fn=printed.append)
    model = _fit_with(4, {"x": x, "y": y, "batch_size": 32}, cb)
    assert len(cb.times) == 3 * steps_per_epoch == int(model.optimizer.iterations.numpy())
    _assert_counts_and_rate(cb, 3 * steps_per_epoch)
    assert len(cb.durations) == 3 * -(-steps_per_epoch // 4)  # one per execution
    assert cb.steps == [4, 4, *([2] if steps_per_epoch == 10 else [])] * 3
    assert cb.steps_per_execution == 4 and cb.result is not None
    assert any("steps_per_execution = 4 was counted" in a for a in cb.result.assumptions)
    assert cb.result.env["steps_per_execution"] == 4
    assert f"over {cb.result.measured_steps} steps" in printed[0]
    one = FitTimer(batch_size=32)
    _fit_with(1, {"x": x, "y": y, "batch_size": 32}, one)
    assert len(one.times) == len(cb.times) and sum(one.steps) == sum(cb.steps)
    assert one.steps == [1] * len(one.times) and one.steps_per_execution == 1
    assert one.result is not None and one.result.env["steps_per_execution"] == 1
    assert not any("steps_per_execution" in a for a in one.result.assumptions)


# Keras warns when a dataset of unknown length ends an epoch by running out, as it must here.
@pytest.mark.filterwarnings("ignore:Your input ran out of data:UserWarning")
@pytest.mark.parametrize(
    "case", ["unknown-length", "steps-per-epoch-on-repeated-data", "accumulated-updates"]
)
def test_steps_per_execution_counts_the_steps_keras_really_ran(case: str) -> None:
    """Keras gives every execution the index of its k-th step, even one that ran fewer; the
    steps are what the model really trained: a tf.data of unknown length (10 batches: its last
    execution runs 2 steps, Keras cannot say), steps_per_epoch=10 on repeated data (Keras runs
    3 whole executions, 12 steps an epoch) and an optimizer that accumulates gradients over 2
    steps (its step counter counts updates, not steps: the epoch's length counts instead)."""
    timer = FitTimer(batch_size=32)
    if case == "unknown-length":
        model = _fit_with(4, {"x": _tf_data(320, unknown_length=True), "shuffle": False}, timer)
    elif case == "steps-per-epoch-on-repeated-data":
        data = {"x": _tf_data(320, repeat=True), "steps_per_epoch": 10, "shuffle": False}
        model = _fit_with(4, data, timer)
    else:
        adam = keras.optimizers.Adam(gradient_accumulation_steps=2)
        x, y = _data(320)
        model = _fit_with(4, {"x": x, "y": y, "batch_size": 32}, timer, optimizer=adam)
    updates = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    ran = {"unknown-length": 30, "steps-per-epoch-on-repeated-data": 36}.get(case, 30)
    assert len(timer.times) == ran == (updates * 2 if case == "accumulated-updates" else updates)
    _assert_counts_and_rate(timer, ran)
    assert timer.result is not None
    by_length = [a for a in timer.result.assumptions if "epoch's length as Keras gave" in a]
    assert len(by_length) == (case == "accumulated-updates")  # said where it was assumed


def _linear_model() -> keras.Model:
    """The MLP without its ReLU: a NaN input reaches the loss on every CPU (TensorFlow's oneDNN
    ReLU, on by default on CPUs with AVX512-VNNI, AVX-VNNI, AVX512-BF16 or AMX, turns a NaN
    into 0 and hides it: see below)."""
    return keras.Sequential([keras.Input((20,)), keras.layers.Dense(16), keras.layers.Dense(3)])


@pytest.mark.parametrize(("steps_per_execution", "named"), [(1, 5), (4, 8)])
def test_a_nan_loss_is_stored_as_diverged_naming_its_step(
    tmp_path: Path, steps_per_execution: int, named: int
) -> None:
    """A NaN in the inputs of the 5th batch makes that step's loss NaN (and every weight after
    it): the run is stored, as ``bench`` stores one, with status "diverged" and the step, and
    the summary is its one line. Keras logs one loss per execution: with steps_per_execution=4
    the NaN is first seen at the end of steps 5-8, and named there."""
    x, y = _data(640)
    x[4 * 32] = np.nan  # the first sample of the 5th batch (no shuffling)
    printed: list[str] = []
    db = tmp_path / "runs.sqlite"
    cb = ScoutCallback(batch_size=32, db=db, predict_on=("h100-sxm",), print_fn=printed.append)
    model = _linear_model()
    model.compile(optimizer="adam", steps_per_execution=steps_per_execution,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
    history = model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=[cb])
    assert len(history.history["loss"]) == 1  # the user's training ran to its end
    assert cb.result is not None and cb.result.id is not None
    with Store(db) as store:
        stored = store.get(cb.result.id)
    assert stored.status == "diverged" and stored.message is not None
    assert stored.message.startswith(f"the loss became NaN at step {named} (of 20 steps")
    assert stored.step_times_s == cb.times and len(cb.times) == 20  # its timing is kept
    (line,) = printed[0].splitlines()  # one line, and no prediction for a broken training
    assert line == f"gpuscout: {stored.message} Stored as run {stored.id} with status " + (
        "diverged: kept, and left out of calibration."
    )
    assert cb.predictions == []


def test_weights_broken_behind_a_finite_loss_are_stored_as_diverged(tmp_path: Path) -> None:
    """A NaN input through a ReLU that turns NaN into 0, as oneDNN's does (the default on CPUs
    with AVX512-VNNI, AVX-VNNI, AVX512-BF16 or AMX; with TF_ENABLE_ONEDNN_OPTS=1 here the plain
    MLP's loss stayed at 1.2 after the NaN batch):
    the loss is finite at every step, and the first layer's kernel is NaN from the 5th step on
    (x^T times the gradient: NaN x 0 is NaN). The weights, checked when training ends, tell."""
    from tests.data.broken_models import _relu_nan_to_zero

    x, y = _data(320)
    x[4 * 32] = np.nan
    printed: list[str] = []
    cb = ScoutCallback(batch_size=32, db=tmp_path / "runs.sqlite", print_fn=printed.append)
    model = keras.Sequential(
        [keras.Input((20,)), keras.layers.Dense(16), keras.layers.Lambda(_relu_nan_to_zero),
         keras.layers.Dense(3)]
    )  # fmt: skip
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
    history = model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=[cb])
    assert np.isfinite(history.history["loss"]).all()  # the loss never showed it
    assert cb.result is not None and cb.result.status == "diverged", cb.result
    assert cb.result.message is not None
    assert cb.result.message.startswith("the loss stayed finite, but 1 of 4 weight tensors")


def test_on_a_catalog_gpu_the_callback_anchors_its_prediction_on_its_own_run(
    tmp_path: Path,
) -> None:
    """Issue 41: the callback predicts through the one session, anchored on the run it just
    measured: that GPU shows the measurement, the others that times the model's ratio. This
    machine has no GPU: the real fit's run is given the device a GPU machine reports (the
    callback's own code reads it), and the trace and the prediction are real."""
    from gpuscout.measure.backends.keras.callback import _predict

    rng = np.random.default_rng(0)
    x, y = rng.random((1024, 20), dtype=np.float32), rng.integers(0, 3, 1024)
    model = _model()
    cb = ScoutCallback(batch_size=32, db=tmp_path / "r.sqlite", predict_on=())
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    assert cb.result is not None and cb.result.samples_per_second is not None
    on_gpu = cb.result.model_copy(
        update={"device": "GPU:0", "env": {**cb.result.env, "device_name": "NVIDIA H100 80GB HBM3"}}
    )
    rows, notes = _predict(model, 32, on_gpu, ("h100-sxm", "a100-80gb-sxm"))
    by = {r.gpu: r for r in rows}
    assert by["h100-sxm"].samples_per_second == cb.result.samples_per_second.median
    assert by["h100-sxm"].method.startswith("measured by your run")
    assert any(n.startswith("anchored on your stored run") for n in notes), notes
    on_cpu, _ = _predict(model, 32, cb.result, ("h100-sxm",))  # a CPU run anchors nothing
    assert on_cpu[0].method.startswith("per-kernel model")
