"""Which predicted options the model can tell apart, given its out-of-sample error.

A ranking is only as good as the model's error on GPUs it has not seen. Two options predicted
3 % apart by a model whose relative speeds are off by 8 % out of sample are not ranked: they are
said to be indistinguishable, and the user is told to measure if the choice matters.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Tie:
    faster: str
    slower: str
    apart: float  # faster / slower - 1, as predicted


def threshold(relative_error: float, power: float = 1.0) -> float:
    """The predicted ratio below which two options are not distinguishable: the error of a
    ratio of two predictions, each off by ``relative_error`` independently (in log terms,
    sqrt(2) times one prediction's error).

    ``power``: how the compared figure scales with speed, as |d log figure / d log speed|.
    Speed and hours (1/speed) are 1, a cost at a fixed price (hours x price) is 1, and a
    product of hours and cost (advise's ``balanced``) is 2: its error is the speed ratio's
    squared, so the threshold is raised to that power."""
    e = min(max(relative_error, 0.0), 10.0)
    return float((1 + e) ** (math.sqrt(2) * power))


def ties(options: Sequence[tuple[str, float]], relative_error: float) -> list[Tie]:
    """Neighbours in speed order (fastest first) that are closer than the model can tell."""
    ordered = sorted(options, key=lambda o: -o[1])
    limit = threshold(relative_error)
    out = []
    for (a, fast), (b, slow) in itertools.pairwise(ordered):
        if slow > 0 and fast / slow < limit:
            out.append(Tie(a, b, fast / slow - 1))
    return out


def groups(options: Sequence[tuple[str, float]], relative_error: float) -> list[list[str]]:
    """Runs of options in speed order that the model cannot tell from the fastest of the run
    (two or more). A run never chains: each member is within the threshold of its first, so a
    group never lumps together options 3x apart through a ladder of close neighbours."""
    limit = threshold(relative_error)
    runs: list[tuple[float, list[str]]] = []
    for name, speed in sorted(options, key=lambda o: -o[1]):
        if runs and speed > 0 and runs[-1][0] / speed < limit:
            runs[-1][1].append(name)
        else:
            runs.append((speed, [name]))
    return [run for _, run in runs if len(run) > 1]


def tie_notes(options: Sequence[tuple[str, float]], relative_error: float) -> list[str]:
    """One line naming every run of options closer than the model's out-of-sample error."""
    runs = groups(options, relative_error)
    if not runs:
        return []
    return [
        f"not distinguishable (neighbours predicted closer than x{threshold(relative_error):.2f}"
        f", as relative speeds are off by up to {relative_error:.0%} out of sample; fastest "
        f"first): {'; '.join(' ~ '.join(run) for run in runs)}. Measure if the choice matters"
    ]


def tied_with_next(options: Sequence[tuple[str, float]], relative_error: float) -> set[str]:
    """The options the model cannot tell from the next slower one."""
    return {t.faster for t in ties(options, relative_error)}
