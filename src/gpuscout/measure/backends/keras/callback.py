"""ScoutCallback: timing the user's own ``model.fit`` from inside it.

A Keras callback, so it imports Keras; it lives with the Keras 3 code both backends share, and
users import it as ``gpuscout.keras.ScoutCallback``. It reads the backend Keras runs on
(TensorFlow, JAX or PyTorch), records it with the run and traces the step on it for predictions
(its HLO; on PyTorch the step's aten ops, captured from a clone of the model and written as HLO).
:class:`FitTimer` times and composes the run; :class:`ScoutCallback` stores it, predicts other
GPUs from the model's HLO and prints, as ``cli`` does for the commands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import keras

from gpuscout.core.records import RunResult
from gpuscout.measure.backends.keras.weights import broken_weights
from gpuscout.measure.loss_check import DIVERGED, LossWatch


class FitTimer(keras.callbacks.Callback):  # type: ignore[misc]
    """Times every batch of a ``model.fit`` and composes the run; :meth:`finish` gets it.

    Each batch is timed from the end of the last one (input and callbacks included, as the
    run pays for them); warm-up is detected and dropped as in ``bench``; the device monitor
    samples from a background thread. ``batch_size``: samples per batch (Keras does not tell
    callbacks); without it the unit is steps/s.

    A model compiled with ``steps_per_execution=k`` runs up to k steps between two callbacks,
    so each of ``durations`` (seconds from one training callback to the next) covers the
    number of ``steps`` counted for it; ``times`` is every step's time (an execution's time
    shared by its steps). Keras hands ``on_train_batch_end`` the index of the execution's k-th
    step (``begin + k - 1``, keras/src/trainers/epoch_iterator.py), even for an epoch's last
    execution when fewer steps were left: the steps since the last callback come from those
    indices, and the last execution of an epoch from the optimizer's step counter (exact at
    the epoch's end on TensorFlow and JAX), else from the epoch's length Keras gives.

    The loss Keras logs at each batch end is checked as ``bench`` checks its own
    (:class:`~gpuscout.measure.loss_check.LossWatch`): a NaN/Inf or a 1000 x grown loss makes
    the run "diverged", naming the step, so a broken training never enters calibration as
    "ok" (issue 31). That value is already on the host, so checking it costs no sync. It is
    Keras' running mean over the epoch so far: a NaN step keeps it NaN, and the first batch's
    is that step's own loss. With ``steps_per_execution`` it comes once per execution and is
    counted at the execution's last step, once the steps it covers are known (the epoch's last
    execution is counted at the epoch's end).
    """

    def __init__(self, batch_size: int | None = None, monitor_hz: float = 10.0) -> None:
        super().__init__()
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.batch_size = batch_size
        self.monitor_hz = monitor_hz
        self.durations: list[float] = []
        self.steps: list[int] = []
        self.steps_per_execution = 1
        self.result: RunResult | None = None
        self._last = 0.0
        self._monitor: Any = None
        self._last_index = -1  # the index Keras gave the epoch's last execution so far
        self._epoch_first = 0  # where the epoch's executions start in durations
        self._epoch_counter: int | None = None  # the optimizer's steps as the epoch began
        self._by_length = 0  # epochs whose last execution was counted from Keras' length
        self._unknown = 0  # epochs whose last execution was counted as whole (length unknown)
        self.losses = LossWatch()
        self._pending: float | None = None  # the last execution's loss, until its steps are known

    @property
    def times(self) -> list[float]:
        """Every step's time, in seconds, warm-up first: each execution's time shared equally
        among its steps (one time per step, as the run stores them)."""
        return [t / n for t, n in zip(self.durations, self.steps, strict=True) for _ in range(n)]

    def on_train_begin(self, logs: Any = None) -> None:
        from gpuscout.measure.monitor import start_monitor

        self.durations, self.steps, self._last = [], [], 0.0
        self._by_length = self._unknown = 0
        self.losses, self._pending = LossWatch(), None
        self.steps_per_execution = max(1, int(getattr(self.model, "steps_per_execution", 1)))
        self._monitor = start_monitor(None, None, self.monitor_hz)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        loss = _loss(logs)  # the loss is on the host: the step has finished
        now = time.perf_counter()
        self._watch_pending()
        self.durations.append(now - self._last)
        # Keras gives the index of the execution's last step: the steps since the last call
        self.steps.append(batch - self._last_index if batch > self._last_index else 1)
        self._last_index = batch
        self._last = now
        self._pending = loss

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._last_index, self._epoch_first = -1, len(self.durations)
        if self.steps_per_execution > 1:
            self._epoch_counter = _optimizer_steps(self.model)
        # Time between epochs (validation, other callbacks' epoch work) is not a step.
        self._last = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self.steps_per_execution > 1 and len(self.durations) > self._epoch_first:
            self._count_last_execution()
        self._watch_pending()

    def _watch_pending(self) -> None:
        """Check the last execution's loss, now that the steps it covers are counted."""
        if self._pending is not None and self.steps:
            self.losses.add(self._pending, self.steps[-1])
        self._pending = None

    def _count_last_execution(self) -> None:
        """The steps of the epoch's last execution, which Keras numbers as if it held k."""
        before = sum(self.steps[self._epoch_first : -1])  # whole executions: the data lasted
        claimed = self.steps[-1]
        now = _optimizer_steps(self.model)
        if now is not None and self._epoch_counter is not None:
            ran = now - self._epoch_counter
            if before < ran <= before + claimed:
                self.steps[-1] = ran - before
                return
        length = (self.params or {}).get("steps")
        if length is None:
            self._unknown += 1
        elif before < length < before + claimed:
            self.steps[-1] = length - before
            self._by_length += 1

    def _counting(self) -> list[str]:
        """How steps were counted where neither Keras nor the optimizer said exactly."""
        k, notes = self.steps_per_execution, []
        counter = (
            "the optimizer's step counter does not count steps here (no optimizer, one that "
            "skips or accumulates updates, or a train_step of its own)"
        )
        if self._by_length:
            notes.append(
                f"{counter}: the last execution of {self._by_length} epoch(s) was counted to "
                "the end of the epoch's length as Keras gave it"
            )
        if self._unknown:
            notes.append(
                f"{counter} and Keras did not know the epoch's length: the last execution of "
                f"{self._unknown} epoch(s) was counted as {k} steps, and may have run fewer"
            )
        return notes

    def on_train_end(self, logs: Any = None) -> None:
        from gpuscout.measure.monitor import attach

        self._watch_pending()
        result = self._compose()
        broken = self.losses.verdict()
        if broken is None and self.model is not None:  # a NaN the loss never showed
            broken = broken_weights(self.model)
        if broken and result.status == "ok":  # timed honestly, but no benchmark (as bench)
            result = result.model_copy(update={"status": DIVERGED, "message": broken})
        self.result = attach(result, self._monitor)
        self.finish(self.result)

    def finish(self, result: RunResult) -> None:
        """Called with the run when training ends (a subclass stores or prints it)."""

    def _compose(self) -> RunResult:
        from gpuscout.measure.environment import base_environment
        from gpuscout.measure.fit_run import compose_fit_run

        backend = keras.backend.backend()
        device, device_name = fit_device(backend)
        return compose_fit_run(
            self.durations,
            model_name=self.model.name,
            device=device,
            device_name=device_name,
            policy=keras.mixed_precision.global_policy().name,
            xla=bool(getattr(self.model, "jit_compile", False)),
            batch_size=self.batch_size,
            env={**base_environment(), "keras": keras.__version__, **_tf32_switch(backend)},
            backend=backend,
            steps=self.steps,
            steps_per_execution=self.steps_per_execution,
            counting=self._counting(),
        )


def _loss(logs: Any) -> float | None:
    """The loss in a batch's logs as a float; None where there is none or it is no number (a
    model without a loss, a train_step of its own): never an error in the user's training."""
    try:
        return float(logs["loss"]) if logs and "loss" in logs else None
    except Exception:
        return None


def _optimizer_steps(model: Any) -> int | None:
    """The steps the model's optimizer has taken, where that counter counts training steps:
    None without an optimizer, or for one whose counter skips steps (loss scaling) or counts
    updates of several steps (gradient accumulation). On JAX it is read where the model's
    state is in its variables: before an epoch, and at its end (Keras syncs it there)."""
    optimizer = getattr(model, "optimizer", None)
    if (
        optimizer is None
        or isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        or getattr(optimizer, "gradient_accumulation_steps", None)
    ):
        return None
    try:
        return int(keras.ops.convert_to_numpy(optimizer.iterations))
    except Exception:  # a stand-in optimizer: count from Keras' length instead
        return None


DEFAULT_GPUS = ("rtx-4090", "a100-80gb-sxm", "h100-sxm")


class ScoutCallback(FitTimer):
    """Measure, store and project a ``model.fit`` run.

    ``batch_size``: samples per batch (Keras does not tell callbacks); without it the summary
    says steps/s and the stored run has no samples/s. ``db``: the results database (default as
    for ``gpuscout bench``); ``store=False`` keeps nothing. ``predict_on``: catalog GPU ids to
    predict for, ``()`` for none. ``print_fn``: where the summary goes. After training,
    ``self.result`` holds the run.
    """

    def __init__(
        self,
        batch_size: int | None = None,
        db: str | Path | None = None,
        store: bool = True,
        predict_on: Sequence[str] = DEFAULT_GPUS,
        monitor_hz: float = 10.0,
        print_fn: Callable[[str], None] = print,
    ) -> None:
        super().__init__(batch_size, monitor_hz)
        self.db, self.keep = db, store
        self.predict_on = tuple(predict_on)
        self.print_fn = print_fn
        self.predictions: list[Any] = []

    def finish(self, result: RunResult) -> None:
        problem = None
        if self.keep and result.status in ("ok", DIVERGED):  # a broken training, as bench
            problem = self._store(result)
        self.print_fn(self.summary() + (f"\n{problem}" if problem else ""))

    def _store(self, result: RunResult) -> str | None:
        """Save the run; on any failure (database locked, disk full, server down, a bug) the
        reason, as the line to print: the user's training has finished, so never fail it now."""
        from gpuscout.core.errors import GpuscoutError
        from gpuscout.store import Store, default_target
        from gpuscout.store.unsaved import unsaved_file

        try:
            store = Store(self.db)
        except Exception as exc:  # read-only, unreachable: the run is kept all the same
            kept = unsaved_file(result, str(self.db or default_target()))
            where = f"; it was kept in {kept} (gpuscout runs import {kept})" if kept else ""
            return f"gpuscout: the run was not stored: {exc}{where}"
        try:
            with store:  # a refused save keeps the run in a file and names it (Store.save)
                self.result = store.save(result)
        except GpuscoutError as exc:
            return f"gpuscout: the run was not stored: {exc}"
        except Exception as exc:  # printed, never raised (see the docstring)
            return f"gpuscout: the run was not stored: {type(exc).__name__}: {exc}"
        return None

    def summary(self) -> str:
        """The lines printed at the end of training."""
        r = self.result
        assert r is not None
        from gpuscout.measure.fit_run import fit_rate

        found = fit_rate(r)
        if r.status == DIVERGED:  # its speed is no benchmark: the one line says why
            stored = (
                f" Stored as run {r.id} with status {DIVERGED}: kept, and left out of calibration."
                if r.id is not None
                else ""
            )
            return f"gpuscout: {r.message}{stored}"
        if r.status != "ok" or found is None:
            return f"gpuscout: {r.message}"
        rate, unit = found
        ci = (
            f" [95% CI {rate.ci_low:,.1f} - {rate.ci_high:,.1f}]"
            if rate.ci_low is not None and rate.ci_high is not None
            else ""
        )
        assert r.warmup is not None
        lines = [
            f"gpuscout: {rate.median:,.1f} {unit}{ci} on {r.device} over {r.measured_steps} steps "
            f"({r.warmup.steps} warm-up steps dropped)"
            + (f"; stored as run {r.id}" if r.id is not None else "")
        ]
        lines += [f"gpuscout: warning: {w}" for w in r.warnings]
        lines += self._predictions()
        return "\n".join(lines)

    def _predictions(self) -> list[str]:
        if not self.predict_on or not self.batch_size:
            return []
        try:
            assert self.result is not None
            rows, notes = _predict(self.model, self.batch_size, self.result, self.predict_on)
        except Exception as exc:  # the prediction is a bonus: never fail the user's training
            return [f"gpuscout: no prediction for this model ({type(exc).__name__}: {exc})"]
        self.predictions = rows
        anchored = any(n.startswith("anchored on") for n in notes)
        out = [
            "gpuscout: predicted on other GPUs (roofline on this model's HLO, fitted to "
            "published results"
            + ("; anchored on this run's own measurement" if anchored else "")
            + "; range: out-of-sample errors):"
        ]
        for p in rows:
            out.append(
                f"  {p.gpu_name}: {p.samples_per_second:,.0f} samples/s "
                f"({p.low:,.0f} - {p.high:,.0f})"
                + ("" if p.fits_memory else " - does not fit in memory")
            )
        return out + [f"  assumption: {n}" for n in notes[:3]]


def _predict(
    model: Any, batch: int, run: RunResult, gpu_ids: Sequence[str]
) -> tuple[list[Any], list[str]]:
    """The model's step on other GPUs, through the one prediction session every command uses,
    anchored on this very run where it ran on a catalog GPU (it measured this step): stored
    runs of other fits are not read, as a Keras model's name does not say it is the same
    model."""
    from gpuscout.catalog import load_catalog
    from gpuscout.measure.fit_run import fit_workload
    from gpuscout.predict.hlo import step_cost
    from gpuscout.predict.profile_trace import eager, profile_from_ir, tracer
    from gpuscout.predict.session import session

    precision = run.precision

    backend = keras.backend.backend()  # the HLO of the step as this process's Keras runs it
    ir = tracer(backend).trace_live_step(model, batch, precision)
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    # on PyTorch the captured step as eager PyTorch runs it (one kernel an aten op)
    profile = eager(profile_from_ir(fit_workload(model.name), {}, batch, precision, ir, cost))
    catalog = load_catalog()
    gpus = [catalog.resolve(g).gpu for g in gpu_ids]
    tf32 = _tf32_switch(backend)["tf32_enabled"]  # predict as the user's process trains
    # the stack level of the backend the user trains on (keras-jax, pytorch), as predict's
    model_session = session(catalog, runs=[run], backend=backend)
    return model_session.predict(profile, gpus, [1], reference=gpus[0], epoch_samples=batch,
                                 tf32=tf32)  # fmt: skip


def _tf32_switch(backend: str) -> dict[str, bool]:
    """The TF32 switch in the user's process (they may have turned it off), so that ``runs
    compare`` and ``predict`` read the fit run's TF32 as it was, not as the default: on JAX,
    its default matmul precision."""
    from gpuscout.measure.backends import get

    return {"tf32_enabled": get(backend).tf32_enabled()}


def fit_device(backend: str = "tensorflow") -> tuple[str, str]:
    """The device Keras trains on, as gpuscout names it (GPU:0, CPU:0), and its hardware."""
    from gpuscout.measure.backends import get

    return get(backend).fit_device()
