"""ScoutCallback: timing the user's own ``model.fit`` from inside it.

A Keras callback, so it imports Keras and lives in the TensorFlow backend; users import it as
``gpuscout.keras.ScoutCallback``. :class:`FitTimer` times and composes the run;
:class:`ScoutCallback` stores it, predicts other GPUs from the model's HLO and prints, as
``cli`` does for the commands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import keras

from gpuscout.records import BenchConfig, Interval, RunResult, StepTimes, Warmup


class FitTimer(keras.callbacks.Callback):  # type: ignore[misc]
    """Times every batch of a ``model.fit`` and composes the run; :meth:`finish` gets it.

    Each batch is timed from the end of the last one (input and callbacks included, as the
    run pays for them); warm-up is detected and dropped as in ``bench``; the device monitor
    samples from a background thread. ``batch_size``: samples per batch (Keras does not tell
    callbacks); without it the unit is steps/s.
    """

    def __init__(self, batch_size: int | None = None, monitor_hz: float = 10.0) -> None:
        super().__init__()
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.batch_size = batch_size
        self.monitor_hz = monitor_hz
        self.times: list[float] = []
        self.result: RunResult | None = None
        self._last = 0.0
        self._monitor: Any = None

    def on_train_begin(self, logs: Any = None) -> None:
        from gpuscout.measure.monitor import start_monitor

        self.times, self._last = [], 0.0
        self._monitor = start_monitor(None, None, self.monitor_hz)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if logs and "loss" in logs:
            float(logs["loss"])  # the loss is on the host: the step has finished
        now = time.perf_counter()
        self.times.append(now - self._last)
        self._last = now

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        # Time between epochs (validation, other callbacks' epoch work) is not a step.
        self._last = time.perf_counter()

    def on_train_end(self, logs: Any = None) -> None:
        from gpuscout.measure.monitor import attach

        self.result = attach(self._compose(), self._monitor)
        self.finish(self.result)

    def finish(self, result: RunResult) -> None:
        """Called with the run when training ends (a subclass stores or prints it)."""

    def _compose(self) -> RunResult:
        from gpuscout.measure.environment import base_environment
        from gpuscout.measure.stats import detect_warmup, summarize

        precision = keras.mixed_precision.global_policy().name
        precision = "fp32" if precision == "float32" else precision
        device = fit_device()
        common: dict[str, Any] = {
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "workload": f"fit:{self.model.name}",
            "device": device[0],
            "precision": precision,
            "xla": bool(getattr(self.model, "jit_compile", False)),
            "loop": "fit",
            "batch_size": self.batch_size or 0,
            "config": BenchConfig(workload="mlp", loop="fit", batch_size=self.batch_size),
            "env": {**base_environment(), "device_name": device[1], "keras": keras.__version__},
            "step_times_s": self.times,
        }
        if len(self.times) < 3:
            return RunResult(
                status="error",
                message=f"only {len(self.times)} training steps: too few to measure",
                **common,
            )
        warmup = detect_warmup(self.times)
        method = "detected"
        if warmup is None:
            warmup, method = max(1, len(self.times) // 10), "not found: first 10% dropped"
        s = summarize(self.times[warmup:])
        b = self.batch_size or 1
        known = s.ci_low == s.ci_low
        return RunResult(
            status="ok",
            samples_per_second=Interval(
                median=b / s.median,
                ci_low=b / s.ci_high if known else None,
                ci_high=b / s.ci_low if known else None,
            ),
            mean_samples_per_second=b / s.mean,
            step_time_s=StepTimes(median=s.median, p5=s.p5, p95=s.p95, mean=s.mean),
            cv=s.cv,
            outliers=s.outliers,
            warmup=Warmup(steps=warmup, seconds=sum(self.times[:warmup]), method=method),
            measured_steps=s.n,
            stop_reason="fit ended",
            assumptions=[
                "timed by ScoutCallback inside model.fit: each batch from the end of the last "
                "one, so input and callbacks are included, as the run pays for them",
                "the unit is steps/s: pass ScoutCallback(batch_size=...) for samples/s"
                if not self.batch_size
                else f"batch size {self.batch_size}, as given to ScoutCallback",
            ],
            **common,
        )


DEFAULT_GPUS = ("rtx-4090", "a100-80gb-sxm", "h100-sxm")


class ScoutCallback(FitTimer):
    """Measure, store and project a ``model.fit`` run.

    ``batch_size``: samples per batch (Keras does not tell callbacks); without it throughput
    is reported in steps/s. ``db``: the results database (default as for ``gpuscout bench``);
    ``store=False`` keeps nothing. ``predict_on``: catalog GPU ids to predict for, ``()`` for
    none. ``print_fn``: where the summary goes. After training, ``self.result`` holds the run.
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
        from gpuscout.errors import GpuscoutError

        problem = None
        if self.keep and result.status == "ok":
            from gpuscout.store import Store

            try:
                with Store(self.db) as store:
                    self.result = store.save(result)
            except GpuscoutError as exc:  # the user's training has finished: never fail it now
                problem = f"gpuscout: the run was not stored: {exc}"
        self.print_fn(self.summary() + (f"\n{problem}" if problem else ""))

    def summary(self) -> str:
        """The lines printed at the end of training."""
        r = self.result
        assert r is not None
        if r.status != "ok" or r.samples_per_second is None:
            return f"gpuscout: {r.message}"
        unit = "samples/s" if self.batch_size else "steps/s"
        sps = r.samples_per_second
        ci = (
            f" [95% CI {sps.ci_low:,.1f} - {sps.ci_high:,.1f}]"
            if sps.ci_low is not None and sps.ci_high is not None
            else ""
        )
        assert r.warmup is not None
        lines = [
            f"gpuscout: {sps.median:,.1f} {unit}{ci} on {r.device} over {r.measured_steps} steps "
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
            rows, notes = _predict(
                self.model, self.batch_size, self.result.precision, self.predict_on
            )
        except Exception as exc:  # the prediction is a bonus: never fail the user's training
            return [f"gpuscout: no prediction for this model ({type(exc).__name__}: {exc})"]
        self.predictions = rows
        out = [
            "gpuscout: predicted on other GPUs (roofline on this model's HLO, fitted to "
            "published results; range = the fit's middle 80%):"
        ]
        for p in rows:
            out.append(
                f"  {p.gpu_name}: {p.samples_per_second:,.0f} samples/s "
                f"({p.low:,.0f} - {p.high:,.0f})"
                + ("" if p.fits_memory else " - does not fit in memory")
            )
        return out + [f"  assumption: {n}" for n in notes[:3]]


def _predict(
    model: Any, batch: int, precision: str, gpu_ids: Sequence[str]
) -> tuple[list[Any], list[str]]:
    from gpuscout.catalog import load_catalog
    from gpuscout.measure.backends.tensorflow.hlo import live_step_hlo
    from gpuscout.predict import predict
    from gpuscout.predict.hlo import step_cost
    from gpuscout.predict.profile import profile_from_ir

    ir = live_step_hlo(model, batch, precision)
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    profile = profile_from_ir(f"fit:{model.name}", {}, batch, precision, ir, cost)
    catalog = load_catalog()
    gpus = [catalog.resolve(g).gpu for g in gpu_ids]
    return predict(profile, gpus, [1], catalog, gpus[0], epoch_samples=batch)


def fit_device() -> tuple[str, str]:
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        name = gpus[0].name.split("device:")[-1]
        details = tf.config.experimental.get_device_details(
            tf.config.list_physical_devices("GPU")[0]
        )
        return name, str(details.get("device_name", "GPU"))
    from gpuscout.measure.environment import cpu_model

    return "CPU:0", cpu_model()
