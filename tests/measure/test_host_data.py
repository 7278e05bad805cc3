"""The NumPy input pipelines the JAX backend feeds (``measure/host_data.py``), without any
framework: each fix changes how batches are made, never which samples an epoch holds; the
threads it starts stop with the iterator; the user's data is read the ways Keras users write
it (a generator, a list, a PyDataset-like sequence) and refused in one line when it is not."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from gpuscout.core.errors import UserError
from gpuscout.measure import host_data
from gpuscout.measure.pipelines import Knobs, demo_preprocess
from gpuscout.measure.synthetic import arrays
from gpuscout.workloads import get_workload

DEMO = get_workload("input-bound-demo")
DIMS = DEMO.resolve({"samples": 64, "work": 2})


def _same(x: Any) -> Any:
    return x


def _take(dataset: Any, n: int) -> list[Any]:
    it = iter(dataset)
    try:
        return [next(it) for _ in range(n)]
    finally:
        it.close()


def _threads(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def test_an_epoch_of_generated_data_holds_every_sample_once_then_reshuffles() -> None:
    mlp = get_workload("mlp")
    dims = mlp.resolve({})
    pipe = host_data.builtin(mlp, dims, 256, Knobs(), 0, _same)
    assert pipe.finite and not pipe.has_map
    assert pipe.no_cache and "nothing to cache" in pipe.no_cache  # arrays in memory already
    ((x, y),) = _take(pipe.dataset, 1)
    assert x.shape == (256, dims["inputs"]) and y.shape == (256,)
    x, y = arrays(mlp, dims, 64, 0)
    pipe = host_data.generated(x, y, 16, Knobs(), 0, _same)
    epoch = pipe.steps_per_epoch
    assert epoch == 4
    batches = _take(pipe.dataset, 2 * epoch)
    first = np.concatenate([x for x, _ in batches[:epoch]])
    second = np.concatenate([x for x, _ in batches[epoch:]])
    assert len(np.unique(first, axis=0)) == len(first)  # no sample twice in an epoch
    assert sorted(map(tuple, first)) == sorted(map(tuple, second))  # the same samples
    assert not np.array_equal(first, second)  # in another order


def test_parallel_map_and_cache_make_the_same_samples_as_the_plain_pipeline() -> None:
    def epoch(knobs: Knobs) -> np.ndarray:
        pipe = host_data.builtin(DEMO, DIMS, 16, knobs, 3, _same)
        assert pipe.has_map and pipe.no_cache is None and pipe.steps_per_epoch == 4
        return np.concatenate([x for x, _ in _take(pipe.dataset, 4)])

    plain = epoch(Knobs())
    assert np.array_equal(epoch(Knobs(parallel=True)), plain)  # threads keep the order
    cached = epoch(Knobs(cache=True))
    assert sorted(map(tuple, cached)) == sorted(map(tuple, plain))
    raw = arrays(DEMO, DIMS, 64, 3)[0]
    expected = {tuple(demo_preprocess(s, 2)) for s in raw}
    assert {tuple(s) for s in plain} == expected  # each sample really went through it
    assert not _threads("gpuscout-map")  # the pool ended with its iterator


def test_prefetch_places_batches_in_its_thread_ahead_and_stops_with_the_iterator() -> None:
    placed_in: list[str] = []

    def place(batch: Any) -> Any:
        placed_in.append(threading.current_thread().name)
        return batch

    plain = _take(host_data.builtin(DEMO, DIMS, 16, Knobs(), 1, _same).dataset, 6)
    pipe = host_data.builtin(DEMO, DIMS, 16, Knobs(prefetch=True), 1, place)
    it = iter(pipe.dataset)
    got = [next(it) for _ in range(6)]
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(plain, got, strict=True))
    assert set(placed_in) == {"gpuscout-prefetch"}  # placed off the training thread
    assert len(_threads("gpuscout-prefetch")) == 1
    it.close()  # type: ignore[attr-defined]
    assert not _threads("gpuscout-prefetch")


def test_an_error_in_a_prefetched_pipeline_is_raised_where_the_batches_are_read() -> None:
    def broken() -> Iterator[int]:
        yield 1
        raise ValueError("bad record 7")

    it = host_data.prefetched(broken())
    assert next(it) == 1
    with pytest.raises(ValueError, match="bad record 7"):
        next(it)
    assert not _threads("gpuscout-prefetch")


def _rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n * 3, dtype=np.float32).reshape(n, 3), np.arange(n) % 5


class Batches:
    """What a keras.utils.PyDataset is to gpuscout: a length and batches by index."""

    def __init__(self) -> None:
        self.x, self.y = _rows(64)
        self.epochs_ended = 0
        self.loaded_by: set[str] = set()

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        self.loaded_by.add(threading.current_thread().name)
        return self.x[16 * i : 16 * (i + 1)], self.y[16 * i : 16 * (i + 1)]

    def on_epoch_end(self) -> None:
        self.epochs_ended += 1


def test_your_generator_is_called_again_for_each_epoch_and_rebatched() -> None:
    calls = []

    def make() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        calls.append(1)
        x, y = _rows(64)
        return ((x[i : i + 16], y[i : i + 16]) for i in range(0, 64, 16))

    pipe = host_data.user(make, "f.py:gen", Knobs(), set(), 24, _same)
    assert pipe.batch_size == 24 and not pipe.finite
    assert pipe.no_cache and "no length" in pipe.no_cache
    assert not pipe.has_map and pipe.no_parallel and "PyDataset" in pipe.no_parallel
    batches = _take(pipe.dataset, 4)  # 64 samples: 2 batches of 24 an epoch, 16 dropped
    assert [len(y) for _, y in batches] == [24] * 4
    assert np.array_equal(batches[0][0][0], batches[2][0][0])  # the next epoch starts anew
    assert len(calls) >= 3  # the probe, then one call per epoch
    with pytest.raises(host_data.TooFewSamples, match="fewer samples than one batch of 128"):
        host_data.user(make, "f.py:gen", Knobs(), set(), 128, _same)


def test_a_sequence_is_loaded_in_threads_and_cached_from_outside() -> None:
    data = Batches()
    pipe = host_data.user(lambda: data, "f.py:seq", Knobs(parallel=True), set(), None, _same)
    assert pipe.finite and pipe.has_map and pipe.steps_per_epoch == 4 and pipe.batch_size == 16
    assert any("loaded by" in n for n in pipe.notes)
    batches = _take(pipe.dataset, 8)
    assert [b[0][0, 0] for b in batches] == [0.0, 48.0, 96.0, 144.0] * 2  # in order
    assert any(name.startswith("gpuscout-load") for name in data.loaded_by)
    assert data.epochs_ended >= 1 and not _threads("gpuscout-load")
    data = Batches()
    cached = host_data.user(lambda: data, "f.py:seq", Knobs(cache=True), set(), None, _same)
    assert any("cache applied by gpuscout" in n for n in cached.notes)
    replayed = _take(cached.dataset, 12)
    assert replayed[4][0] is replayed[0][0] and replayed[8][0] is replayed[0][0]


def test_a_function_that_applies_the_fixes_itself_is_left_to_do_so() -> None:
    pipe = host_data.user(Batches, "f.py:seq", Knobs(cache=True), {"cache"}, None, _same)
    assert "which applies ['cache'] itself" in pipe.notes[0]
    assert not any("cache applied by gpuscout" in n for n in pipe.notes)
    batches = _take(pipe.dataset, 5)
    assert batches[4][0] is not batches[0][0]  # not replayed by gpuscout


@pytest.mark.parametrize(
    ("made", "says"),
    [
        (7, "returned int, not batches"),
        ("data.npz", "returned str, not batches"),
        ([(1, 2, 3)], "yielded a tuple of 3, not an (inputs, labels) pair"),
        (iter([np.zeros(3)]), "yielded a ndarray, not an (inputs, labels) pair"),
        ([], "yielded no batch"),
    ],
)
def test_data_that_is_not_batches_is_one_line_naming_what_it_was(made: Any, says: str) -> None:
    with pytest.raises(UserError, match=re.escape("--data 'f.py:bad'")) as caught:
        host_data.user(lambda: made, "f.py:bad", Knobs(), set(), None, _same)
    assert says in caught.value.problem and caught.value.fix
