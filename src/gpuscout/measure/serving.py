"""``bench --mode inference``, the part every backend shares: the plan of points (serving
path x batch size x concurrency), the closed-loop clients, and the sweep over the points.

A request is one call of the model on one batch, timed from the call until its output is on
the host: what a client waits for. Concurrency is that many client threads, each sending its
next request as soon as the last one returns (a closed loop). TensorFlow and JAX both release
the GIL while the device works, so the threads do overlap. A backend supplies, per serving
path and batch size, a function that makes one request and returns once its output is on the
host; no framework is imported here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuscout.core.records import BenchConfig

DEFAULT_BATCH_SIZES = [1, 8, 32]
WARMUP_CALLS = 5  # per serving path and batch size: tracing, XLA compilation, allocator
MIN_POINT_S = 1.0

Request = Callable[[], None]  # one request, returning once its output is on the host


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


def plan(batch_sizes: list[int], concurrency: list[int], paths: list[str], seconds: float) -> Plan:
    """The points to measure and the seconds each gets of ``seconds`` in all (at least
    ``MIN_POINT_S``), with the notes that say so."""
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


def plan_for(config: BenchConfig, paths: list[str]) -> Plan:
    """The plan of an inference run: its batch sizes (the default said), clients, paths."""
    batch_sizes = config.batch_sizes or DEFAULT_BATCH_SIZES
    p = plan(batch_sizes, config.concurrency or [1], paths, config.seconds or 60.0)
    if not config.batch_sizes:
        p.notes.insert(0, f"batch sizes {batch_sizes}: the default (set --batch-sizes)")
    return p


def sweep(
    p: Plan, request_for: Callable[[str, int], Request], on_phase: Callable[[str], None]
) -> list[Served]:
    """Every point of ``p``, warmed up per path and batch size: raw latencies per request.
    ``request_for(path, batch)`` makes the batch's inputs (once) and returns its request."""
    out: list[Served] = []
    for path in p.paths:
        for batch in p.batch_sizes:
            request = request_for(path, batch)
            on_phase(f"warming up {path}, batch {batch}")
            for _ in range(WARMUP_CALLS):
                request()
            for concurrency in p.concurrency:
                on_phase(f"serving {path}: batch {batch}, {concurrency} client(s)")
                lat, seconds = clients(request, concurrency, p.seconds_per_point)
                out.append(Served(path, batch, concurrency, lat, seconds))
    return out


def clients(request: Request, concurrency: int, seconds: float) -> tuple[list[float], float]:
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
                request()
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
