"""Input pipelines of NumPy batches made on the host, for a backend with no input pipeline of
its own (JAX; doctor on Keras-on-PyTorch too), with doctor's three pipeline fixes done the way a
JAX training loop does them (a PyTorch ``DataLoader`` does the same in worker processes):

- **prefetch**: a background thread makes the next batches and places them on the device
  (``place``: ``jax.device_put``, or torch tensors moved ``.to(device)``) while the step runs,
  as flax's ``prefetch_to_device`` does;
- **parallel map**: a batch's per-sample preprocessing runs in a thread pool (NumPy releases
  Python's GIL inside its array operations; Python code between them holds it), as Grain's
  ``ReadOptions(num_threads=...)`` does; a user's indexable data (a ``keras.utils.PyDataset``)
  has its batches loaded by several threads at once, as its ``workers`` do;
- **cache**: the preprocessed samples are kept after the first epoch and reshuffled each epoch.

A pipeline's ``dataset`` is re-iterable: each ``iter()`` is an endless stream of placed
``(x, y)`` batches (epochs repeat; a user's data that yields no batch in an epoch ends it), and
dropping the iterator stops its threads. No framework is imported here.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscout.core.errors import UserError
from gpuscout.measure.host_batches import Batch, as_numpy, leaves, rebatch, rows, take
from gpuscout.measure.pipelines import (
    Knobs,
    Pipeline,
    check_demo_batch,
    demo_note,
    demo_preprocess,
    in_memory_samples,
)
from gpuscout.measure.synthetic import arrays
from gpuscout.workloads import Dims, Workload

Place = Callable[[Batch], Any]
PREFETCH_DEPTH = 2  # batches made ahead, as prefetch_to_device(size=2)
CACHE_SHARE = 0.25  # of the machine's memory a cache of the user's batches may take
WORKERS = os.cpu_count() or 1


class TooFewSamples(UserError):
    """The user's data holds fewer samples than one batch of the size asked for (the doctor's
    batch search reads it as "does not fit")."""


@dataclass(frozen=True)
class Stream:
    """A re-iterable pipeline: ``make()`` starts an endless iterator of host batches, each
    placed by ``place`` (in the prefetch thread when prefetching)."""

    make: Callable[[], Iterator[Batch]]
    place: Place
    prefetch: bool

    def __iter__(self) -> Iterator[Any]:
        return self._placed()

    def _placed(self) -> Iterator[Any]:
        source = self.make()
        placed: Iterator[Any] = (self.place(b) for b in source)
        try:
            yield from prefetched(placed) if self.prefetch else placed
        finally:  # the pipeline's own threads stop with it
            with suppress(AttributeError, ValueError):  # no generator, or one still running
                source.close()  # type: ignore[attr-defined]


def close_iterator(iterator: Any) -> None:
    """Stop a pipeline's threads now rather than when its iterator is collected (a generator
    closes; a tf.data iterator has nothing to close)."""
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def first_batch(pipe: Pipeline) -> Any:
    """The first (placed) batch of ``pipe``, its iterator closed after it."""
    batches = iter(pipe.dataset)
    try:
        return next(batches)
    finally:
        close_iterator(batches)


def prefetched(source: Iterator[Any], depth: int = PREFETCH_DEPTH) -> Iterator[Any]:
    """``source``'s items, made ``depth`` ahead by a background thread; its exceptions are
    raised here, and closing (or dropping) this iterator stops the thread."""
    box: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def fill() -> None:
        try:
            for item in source:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, raised there
            put(("error", exc))

    thread = threading.Thread(target=fill, name="gpuscout-prefetch", daemon=True)
    thread.start()
    return _drain(box, stop, thread)


def _drain(
    box: queue.Queue[tuple[str, Any]], stop: threading.Event, thread: threading.Thread
) -> Iterator[Any]:
    try:
        while True:
            kind, item = box.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=10)


def builtin(
    workload: Workload, dims: Dims, batch: int, knobs: Knobs, seed: int, place: Place
) -> Pipeline:
    """A built-in workload's data: its generated samples held in memory (the input-bound demo:
    preprocessed in Python, sample by sample, every epoch)."""
    if workload.has_pipeline:
        check_demo_batch(workload, dims, batch)
        n = dims["samples"]
        x, y = arrays(workload, dims, n, seed)
        work = dims["work"]

        def preprocess(sample: np.ndarray) -> np.ndarray:
            return demo_preprocess(sample, work)

        how = "NumPy on the host" + (f", in {WORKERS} threads" if knobs.parallel else "")
        note = demo_note(n, work, how)
        stream = Stream(
            lambda: _samples(x, y, batch, seed, preprocess, knobs), place, knobs.prefetch
        )
        return Pipeline(stream, batch, [note], True, True, n // batch)
    n = in_memory_samples(workload, dims, batch)
    x, y = arrays(workload, dims, n, seed)
    return _in_memory(x, y, batch, knobs, seed, place)


def generated(x: Any, y: Any, batch: int, knobs: Knobs, seed: int, place: Place) -> Pipeline:
    """For a user's model without data: the random samples made for it, held in memory."""
    return _in_memory(x, y, batch, knobs, seed, place)


def _in_memory(x: Any, y: Any, batch: int, knobs: Knobs, seed: int, place: Place) -> Pipeline:
    n = len(y)
    note = (
        f"data: {n:,} generated samples held in memory as NumPy arrays, shuffled each epoch and "
        "sliced into batches on the host, then placed on the device"
    )
    stream = Stream(lambda: _samples(x, y, batch, seed, None, knobs), place, knobs.prefetch)
    return Pipeline(
        stream, batch, [note], has_map=False, finite=True, steps_per_epoch=n // batch,
        no_cache="the samples are NumPy arrays in memory with no preprocessing: nothing to cache",
    )  # fmt: skip


def _samples(
    x: Any, y: Any, batch: int, seed: int,
    preprocess: Callable[[np.ndarray], np.ndarray] | None, knobs: Knobs,
) -> Iterator[Batch]:  # fmt: skip
    """Endless shuffled epochs of whole batches of ``x`` (a structure of arrays), each sample
    through ``preprocess`` if given: in a thread pool with ``parallel``, once with ``cache``."""
    rng = np.random.default_rng(seed)
    n = len(y)
    pool = ThreadPoolExecutor(WORKERS, "gpuscout-map") if knobs.parallel and preprocess else None

    def prepare(raw: np.ndarray) -> np.ndarray:
        assert preprocess is not None
        done = pool.map(preprocess, raw) if pool else map(preprocess, raw)
        return np.stack(list(done))

    try:
        source = x
        if preprocess is not None and knobs.cache:  # the first epoch fills it, all at once
            source, preprocess = prepare(x), None
        while True:
            order = rng.permutation(n)
            for start in range(0, n - batch + 1, batch):
                idx = order[start : start + batch]
                raw = take(source, idx)
                yield (prepare(raw) if preprocess is not None else raw), y[idx]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def user(
    make: Callable[[], Any], name: str, knobs: Knobs, takes: set[str], batch: int | None,
    place: Place,
) -> Pipeline:  # fmt: skip
    """The user's ``--data``: what ``make()`` returns (its function called, with the knobs it
    ``takes``): an iterable of ``(inputs, labels)`` batches (a generator, a list, a
    ``keras.utils.PyDataset``, a tf.data.Dataset), re-batched to ``batch`` if given (what is
    left over at an epoch's end is dropped). A fix the function does not take is applied from
    outside where that is possible, and said."""
    first = make()
    if isinstance(first, str | bytes | dict) or not (
        isinstance(first, Iterable) or _length(first) is not None
    ):
        raise UserError(
            f"--data '{name}' returned {type(first).__name__}, not batches.",
            "return an iterable of (inputs, labels) NumPy batches: a generator, a list, or a "
            "keras.utils.PyDataset.",
        )
    sized = _length(first)
    notes = [f"data from {name}" + (f", which applies {sorted(takes)} itself" if takes else "")]
    parallel = knobs.parallel and "parallel" not in takes and sized is not None
    if parallel:
        notes.append(
            f"parallel map applied by gpuscout: your data's batches loaded by {WORKERS} threads "
            "at once, in order (as a PyDataset's workers do)"
        )
    cache = knobs.cache and "cache" not in takes and sized is not None
    if cache:
        notes.append(
            "cache applied by gpuscout: your finished batches kept after the first epoch "
            f"(up to {CACHE_SHARE:.0%} of this machine's memory) and replayed in order"
        )
    epochs = _Epochs(make, first, name, parallel)

    def stream() -> Iterator[Batch]:
        return _user_stream(epochs, batch, cache)

    probe = next(stream(), None)
    if probe is None and batch is not None:
        raise TooFewSamples(
            f"--data '{name}' has fewer samples than one batch of {batch}.",
            "pass a smaller --batch-size, or return more data.",
        )
    if probe is None:
        raise UserError(f"--data '{name}' yielded no batch.", "return at least one batch of "
                        "(inputs, labels).")  # fmt: skip
    no_cache = no_parallel = None
    if sized is None and "cache" not in takes:
        no_cache = (
            "your data has no length (a generator): gpuscout cannot tell one epoch from the "
            "next to cache it; a --data function that takes cache=True can"
        )
    if sized is None and "parallel" not in takes:
        no_parallel = (
            "your data is a generator: gpuscout cannot load it in parallel from outside; take "
            "parallel=True in your function, or return a keras.utils.PyDataset"
        )
    return Pipeline(
        Stream(stream, place, knobs.prefetch and "prefetch" not in takes),
        rows(probe[0]), notes, has_map=no_parallel is None, finite=sized is not None,
        steps_per_epoch=sized if batch is None else None, no_cache=no_cache,
        no_parallel=no_parallel,
    )  # fmt: skip


def _length(data: Any) -> int | None:
    """How many batches an epoch of ``data`` has (a list, a PyDataset), or None (a
    generator, a stream)."""
    if not hasattr(data, "__getitem__") or isinstance(data, str | bytes | dict):
        return None
    n = getattr(data, "num_batches", None)
    if n is None and hasattr(data, "__len__"):
        n = len(data)
    return int(n) if n is not None else None


class _Epochs:
    """The user's data, epoch after epoch: indexed (in threads with ``parallel``), iterated
    anew, or (a one-shot iterator, a generator) made anew by calling the function again."""

    def __init__(self, make: Callable[[], Any], first: Any, name: str, parallel: bool) -> None:
        self.make, self.first, self.name, self.parallel = make, first, name, parallel
        self.first_used = False

    def each(self) -> Iterator[Iterator[Batch]]:
        data = self.first
        if isinstance(data, Iterator):  # one-shot: only the first stream may read it
            data = self.make() if self.first_used else data
            self.first_used = True
        while True:
            yield (_checked(item, self.name) for item in self._items(data))
            if hasattr(data, "on_epoch_end"):
                data.on_epoch_end()
            if isinstance(data, Iterator):  # spent: the function makes the next epoch
                data = self.make()

    def _items(self, data: Any) -> Iterator[Any]:
        n = _length(data)
        if n is None:
            yield from data
        elif not self.parallel:
            for i in range(n):
                yield data[i]
        else:
            yield from _loaded(data, n)


def _loaded(data: Any, n: int) -> Iterator[Any]:
    """``data[0..n)`` loaded by :data:`WORKERS` threads, in order, at most twice as many
    batches ahead as there are threads (memory stays bounded)."""
    pool = ThreadPoolExecutor(WORKERS, "gpuscout-load")
    pending: deque[Future[Any]] = deque()
    try:
        for i in range(n):
            pending.append(pool.submit(data.__getitem__, i))
            if len(pending) >= 2 * WORKERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # the batches in flight finish; none is started
        pool.shutdown(wait=True, cancel_futures=True)


def _user_stream(epochs: _Epochs, batch: int | None, cache: bool) -> Iterator[Batch]:
    """Endless epochs of the user's batches (re-batched if ``batch``); with ``cache`` the first
    epoch's are kept, while they fit in :data:`CACHE_SHARE` of the memory, and replayed. An
    epoch that yields no batch ends the stream rather than spin."""
    kept: list[Batch] | None = [] if cache else None
    size, limit = 0, _cache_limit() if cache else 0.0
    for epoch in epochs.each():
        got = False
        for item in rebatch(epoch, batch) if batch is not None else epoch:
            got = True
            if kept is not None:
                size += sum(leaf.nbytes for leaf in leaves(item))
                if size <= limit:
                    kept.append(item)
                else:
                    kept = None
            yield item
        if not got:
            return
        while kept:  # the cache is full: replayed from now on
            yield from kept


def _cache_limit() -> float:
    import psutil

    return CACHE_SHARE * float(psutil.virtual_memory().total)


def _checked(item: Any, name: str) -> Batch:
    """One of the user's batches as NumPy ``(x, y)``; UserError naming what it was if not."""
    if not isinstance(item, tuple | list) or len(item) != 2:
        what = f"a {type(item).__name__}" + (
            f" of {len(item)}" if isinstance(item, tuple | list) else ""
        )
        raise UserError(
            f"--data '{name}' yielded {what}, not an (inputs, labels) pair.",
            "yield (x, y) per batch: NumPy arrays (x may be a tuple or dict of arrays).",
        )
    return as_numpy(item[0]), as_numpy(item[1])
