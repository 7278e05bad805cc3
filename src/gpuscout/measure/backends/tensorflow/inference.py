"""``bench --mode inference``: per-request latency of the model's forward pass at each batch
size x number of concurrent clients, in-process (``tf.function``) and through a real serving
path (the model exported as a SavedModel, loaded with ``tf.saved_model.load`` and called
through its serving signature), so the cost of serving is visible beside the model's own.

A request is one call of the model on one batch, timed from the call until its output is on
the host (``.numpy()``): what a client waits for. Concurrency is that many client threads,
each sending its next request as soon as the last one returns (a closed loop). TensorFlow
releases the GIL while it runs ops, so the threads do overlap.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WARMUP_CALLS = 5  # per serving path and batch size: tracing, XLA compilation, allocator
MIN_POINT_S = 1.0


@dataclass
class Served:
    """Raw latencies of one point of the table."""

    path: str
    batch: int
    concurrency: int
    latencies_s: list[float]
    seconds: float


@dataclass
class Plan:
    batch_sizes: list[int]
    concurrency: list[int]
    paths: list[str]
    seconds_per_point: float
    notes: list[str] = field(default_factory=list)


def plan(batch_sizes: list[int], concurrency: list[int], serving: str, seconds: float) -> Plan:
    paths = {"function": ["tf.function"], "saved_model": ["saved_model"],
             "both": ["tf.function", "saved_model"]}[serving]  # fmt: skip
    points = len(batch_sizes) * len(concurrency) * len(paths)
    per = max(MIN_POINT_S, seconds / points)
    notes = [
        f"{points} points ({len(paths)} serving path(s) x batch sizes "
        f"{', '.join(map(str, batch_sizes))} x concurrency {', '.join(map(str, concurrency))}), "
        f"{per:.3g} s of requests each after {WARMUP_CALLS} warm-up calls per path and batch size",
        "a request = one call of the model on one batch, timed until its output is on the "
        "host; concurrency = that many client threads sending back to back (closed loop)",
    ]
    return Plan(batch_sizes, concurrency, paths, per, notes)


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


def _clients(
    call: Callable[[], Any], concurrency: int, seconds: float
) -> tuple[list[float], float]:
    """``concurrency`` closed-loop clients for ``seconds``; every request's latency."""
    stop = threading.Event()
    per_client: list[list[float]] = [[] for _ in range(concurrency)]
    errors: list[BaseException] = []
    start = threading.Barrier(concurrency + 1)

    def client(out: list[float]) -> None:
        start.wait()
        try:
            while not stop.is_set():
                t0 = time.perf_counter()
                _host(call())
                out.append(time.perf_counter() - t0)
        except BaseException as exc:  # re-raised in the caller: a failed request fails the run
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=client, args=(o,), daemon=True) for o in per_client]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return [x for out in per_client for x in out], elapsed


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
    out: list[Served] = []
    with tempfile.TemporaryDirectory(prefix="gpuscout-savedmodel-") as tmp:
        calls: dict[str, Callable[[Any], Any]] = {"tf.function": forward}
        if "saved_model" in p.paths:
            on_phase("exporting and loading the SavedModel")
            calls["saved_model"] = _saved_model(tf, model, Path(tmp) / "model")
        for path in p.paths:
            fn = calls[path]
            for batch in p.batch_sizes:
                with tf.device(device_name):
                    x = inputs(batch)
                    x = tf.nest.map_structure(tf.convert_to_tensor, x)

                def call(fn: Callable[[Any], Any] = fn, x: Any = x) -> Any:
                    with tf.device(device_name):
                        return fn(x)

                on_phase(f"warming up {path}, batch {batch}")
                for _ in range(WARMUP_CALLS):
                    _host(call())
                for concurrency in p.concurrency:
                    on_phase(f"serving {path}: batch {batch}, {concurrency} client(s)")
                    lat, seconds = _clients(call, concurrency, p.seconds_per_point)
                    out.append(Served(path, batch, concurrency, lat, seconds))
    return out
