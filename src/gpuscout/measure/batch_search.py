"""The largest batch that fits: doubling, then bisection, with a bound on both.

Pure: ``fits`` is any callable that says whether a batch size runs (the doctor's tries two
training steps and catches out-of-memory), so the search is tested with a planted limit.
"""

from __future__ import annotations

from collections.abc import Callable


def largest_fitting(
    fits: Callable[[int], bool], start: int, limit: int, tolerance: float = 1 / 8
) -> tuple[int | None, list[tuple[int, bool]]]:
    """The largest batch in [1, limit] found to fit, and every (batch, fits) tried.

    ``start`` is assumed to fit (the baseline ran at it) and is not tried again. The search
    doubles up to ``limit``, then bisects until the gap between what fits and what does not is
    within ``tolerance`` of it: about log2(limit / start) + 3 tries. Sizes above 8 are kept
    multiples of 8, which GPUs' kernels favour.
    """
    tried: list[tuple[int, bool]] = []

    def attempt(batch: int) -> bool:
        ok = fits(batch)
        tried.append((batch, ok))
        return ok

    lo, hi = start, None
    while hi is None:
        nxt = min(lo * 2, limit)
        if nxt <= lo:
            return lo, tried  # the bound: nothing larger is tried
        if attempt(nxt):
            lo = nxt
        else:
            hi = nxt
    while hi - lo > max(1, int(lo * tolerance)):
        mid = (lo + hi) // 2
        if mid > 8:
            mid = mid // 8 * 8
        if mid <= lo:
            break
        if attempt(mid):
            lo = mid
        else:
            hi = mid
    return lo, tried
