"""The Pareto front of options over (time, cost): those no other option beats on both."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def front(items: Sequence[T], time: Callable[[T], float], cost: Callable[[T], float]) -> list[T]:
    """Items not dominated: nothing else is at least as fast and as cheap, and better in one."""
    out = []
    for a in items:
        dominated = any(
            time(b) <= time(a) and cost(b) <= cost(a) and (time(b) < time(a) or cost(b) < cost(a))
            for b in items
        )
        if not dominated:
            out.append(a)
    return sorted(out, key=time)
