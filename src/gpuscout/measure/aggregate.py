"""A running aggregate of one sampled metric: what the device monitor keeps per metric instead
of every sample, so memory stays bounded however long a run is watched."""

from __future__ import annotations

__all__ = ["RunningAgg"]


class RunningAgg:
    """Count, sum, min, max, first and last of one metric."""

    __slots__ = ("first", "hi", "last", "lo", "n", "total")

    def __init__(self) -> None:
        self.n, self.total = 0, 0.0
        self.lo, self.hi = float("inf"), float("-inf")
        self.first: float | None = None
        self.last: float | None = None

    def add(self, value: float | None) -> None:
        if value is None:
            return
        self.n += 1
        self.total += value
        self.lo, self.hi = min(self.lo, value), max(self.hi, value)
        if self.first is None:
            self.first = value
        self.last = value

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def min(self) -> float | None:
        return self.lo if self.n else None

    @property
    def max(self) -> float | None:
        return self.hi if self.n else None

    @property
    def delta(self) -> float | None:
        return self.last - self.first if self.first is not None and self.last is not None else None
