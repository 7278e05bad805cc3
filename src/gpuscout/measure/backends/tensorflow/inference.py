"""``bench --mode inference`` on TensorFlow: the model called in-process (``tf.function``) and
through a real serving path (the model exported as a SavedModel, loaded with
``tf.saved_model.load`` and called through its serving signature), so the cost of serving is
visible beside the model's own. The points and clients are :mod:`gpuscout.measure.serving`'s.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuscout.measure.serving import Plan, Request, Served, sweep

PATHS = {"function": ["tf.function"], "saved_model": ["saved_model"],
         "both": ["tf.function", "saved_model"]}  # fmt: skip


def _host(out: Any) -> None:
    """Wait for a request's output to reach the host, as a client would."""
    if isinstance(out, dict):
        for value in out.values():
            value.numpy()
    elif isinstance(out, list | tuple):
        for value in out:
            value.numpy()
    else:
        out.numpy()


def _saved_model(tf: Any, model: Any, folder: Path) -> Callable[[Any], Any]:
    """The model exported as a SavedModel and loaded back: the serving signature's call."""
    model.export(str(folder), format="tf_saved_model", verbose=False)
    loaded = tf.saved_model.load(str(folder))

    def call(x: Any) -> Any:  # holds ``loaded``: its variables die with it
        return loaded.serve(x)

    return call


def serve(
    tf: Any,
    model: Any,
    inputs: Callable[[int], Any],
    p: Plan,
    xla: bool,
    device_name: str,
    on_phase: Callable[[str], None],
) -> list[Served]:
    """Every point of ``p``: raw latencies per request."""
    forward = tf.function(lambda x: model(x, training=False), jit_compile=xla)
    with tempfile.TemporaryDirectory(prefix="gpuscout-savedmodel-") as tmp:
        calls: dict[str, Callable[[Any], Any]] = {"tf.function": forward}
        if "saved_model" in p.paths:
            on_phase("exporting and loading the SavedModel")
            calls["saved_model"] = _saved_model(tf, model, Path(tmp) / "model")

        def request_for(path: str, batch: int) -> Request:
            fn = calls[path]
            with tf.device(device_name):
                x = tf.nest.map_structure(tf.convert_to_tensor, inputs(batch))

            def request() -> None:
                with tf.device(device_name):
                    _host(fn(x))

            return request

        return sweep(p, request_for, on_phase)
