"""Batches as the host holds them: NumPy arrays, or tuples and dicts of them (a model with
several inputs), taken apart, joined and regrouped the same way at every leaf. The plumbing of
:mod:`gpuscout.measure.host_data`'s pipelines; no framework is imported here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

Batch = tuple[Any, Any]


def as_numpy(x: Any) -> Any:
    """``x`` as NumPy arrays, its tuples and dicts kept (lists become tuples)."""
    if isinstance(x, dict):
        return {k: as_numpy(v) for k, v in x.items()}
    if isinstance(x, tuple | list):
        return tuple(as_numpy(v) for v in x)
    return np.asarray(x)


def leaves(x: Any) -> Iterator[np.ndarray]:
    """Every array in ``x`` (for sizes: a cache counts their bytes)."""
    if isinstance(x, dict):
        for v in x.values():
            yield from leaves(v)
    elif isinstance(x, tuple | list):
        for v in x:
            yield from leaves(v)
    else:
        yield x


def rows(x: Any) -> int:
    """Samples in ``x``: the first axis of its first array."""
    return int(next(leaves(x)).shape[0])


def take(x: Any, idx: Any) -> Any:
    """The samples ``idx`` (indices or a slice) of every array in ``x``."""
    if isinstance(x, dict):
        return {k: take(v, idx) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(take(v, idx) for v in x)
    return x[idx]


def concat(parts: list[Any]) -> Any:
    """Batches of the same structure joined along their first axis."""
    head = parts[0]
    if isinstance(head, dict):
        return {k: concat([p[k] for p in parts]) for k in head}
    if isinstance(head, tuple):
        return tuple(concat([p[i] for p in parts]) for i in range(len(head)))
    return np.concatenate(parts)


def rebatch(epoch: Iterator[Batch], batch: int) -> Iterator[Batch]:
    """One epoch's samples regrouped into batches of exactly ``batch``; the remainder is
    dropped (as tf.data's ``unbatch().batch(n, drop_remainder=True)``)."""
    xs: list[Any] = []
    ys: list[Any] = []
    have = 0
    for x, y in epoch:
        xs.append(x)
        ys.append(y)
        have += rows(x)
        if have < batch:
            continue
        x_all, y_all = concat(xs), np.concatenate(ys)
        while have >= batch:
            yield take(x_all, slice(0, batch)), y_all[:batch]
            x_all, y_all, have = take(x_all, slice(batch, None)), y_all[batch:], have - batch
        xs, ys = [x_all], [y_all]
