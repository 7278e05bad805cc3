"""``gpuscout.keras.ScoutCallback``: gpuscout's measurement inside your own ``model.fit``.

    from gpuscout.keras import ScoutCallback
    model.fit(x, y, batch_size=256, epochs=3, callbacks=[ScoutCallback(batch_size=256)])

It times every batch (end to end, as your loop pays for it: input included), drops the warm-up
it detects, samples the device monitor, stores the run in gpuscout's results database, and at
the end prints the throughput with its 95% interval and, from gpuscout's predictor, the
expected speed on other GPUs. Without ``batch_size`` (Keras does not tell callbacks) it measures
steps/s and stores no samples/s, so no ranking or calibration can take steps for samples. The
run is stored under the workload ``fit:MODEL_NAME``; a failure to store it is printed, never
raised. The class lives in the TensorFlow backend
(``measure.backends.keras.callback``), the one place allowed to import Keras.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuscout.measure.backends.keras.callback import ScoutCallback

__all__ = ["ScoutCallback"]


def __getattr__(name: str) -> Any:
    """``ScoutCallback`` is a Keras class: imported (with Keras) only when asked for, so that
    ``import gpuscout.keras`` alone, like every module outside the backends, needs no Keras."""
    if name == "ScoutCallback":
        from gpuscout.measure.backends.keras.callback import ScoutCallback

        return ScoutCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
