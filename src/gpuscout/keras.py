"""``gpuscout.keras.ScoutCallback``: gpuscout's measurement inside your own ``model.fit``.

    from gpuscout.keras import ScoutCallback
    model.fit(x, y, batch_size=256, epochs=3, callbacks=[ScoutCallback(batch_size=256)])

It times every batch (end to end, as your loop pays for it: input included), drops the warm-up
it detects, samples the device monitor, stores the run in gpuscout's results database, and at
the end prints the throughput with its 95% interval and, from gpuscout's predictor, the
expected speed on other GPUs. The measuring half (a Keras callback) is
``measure.fit_callback.FitTimer``; this module composes it with the store and the predictor,
as ``cli`` does for the commands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpuscout.measure.fit_callback import FitTimer
from gpuscout.records import RunResult

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
    from gpuscout.measure.tf_profile import live_step_hlo
    from gpuscout.predict import predict
    from gpuscout.predict.hlo import step_cost
    from gpuscout.predict.profile import profile_from_ir

    ir = live_step_hlo(model, batch, precision)
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    profile = profile_from_ir(f"fit:{model.name}", {}, batch, precision, ir, cost)
    catalog = load_catalog()
    gpus = [catalog.resolve(g).gpu for g in gpu_ids]
    return predict(profile, gpus, [1], catalog, gpus[0], epoch_samples=batch)


__all__ = ["ScoutCallback"]
