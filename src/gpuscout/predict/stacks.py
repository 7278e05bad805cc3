"""Software-stack levels a prediction can be made for (``--stack``), from ``data/stacks.csv``.

A published row's speed depends on the software that measured it as well as the GPU: mixed-
precision ResNet-50 on an A100 80GB SXM is published at 1,582 images/s in Lambda's PyTorch
benchmark and at 2,470 in NVIDIA's tuned PyTorch example
(``catalog/data/v1/published_training.csv``). The calibration fits one traffic factor per
published stack (``calibrate.py``); a level groups the stacks a user's software resembles, and a
prediction without a stored run of its own takes the median of the level's factors. Which stacks
make a level, and the level each measuring backend gets by default, are data (sourced, with
why), not code. A stored run anchors instead (``anchoring.py``): its own stack is then measured,
not assumed.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from gpuscout.core.errors import UserError


@dataclass(frozen=True)
class StackLevel:
    """One ``--stack`` level: its name, the published stacks it is learned from, and why."""

    name: str
    stacks: tuple[str, ...]
    description: str
    default_for: str = ""  # the backend whose measurements this level describes by default


@functools.cache
def levels() -> dict[str, StackLevel]:
    """Every level in ``data/stacks.csv``, by name."""
    path = resources.files("gpuscout.predict") / "data" / "stacks.csv"
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {
        r["level"]: StackLevel(
            r["level"], tuple(s for s in r["stacks"].split(";") if s), r["description"],
            r["default_for"],
        )
        for r in rows
    }  # fmt: skip


def default_level(backend: str) -> StackLevel:
    """The level of the stack gpuscout itself measures with on ``backend``."""
    for level in levels().values():
        if level.default_for == backend:
            return level
    return levels()["tf"]


def stack_level(name: str | None, backend: str = "tensorflow") -> StackLevel:
    """The level ``--stack NAME`` names (None: the one gpuscout measures with on ``backend``);
    an unknown name is one line listing the known ones."""
    if name is None:
        return default_level(backend)
    found = levels().get(name)
    if found is None:
        raise UserError(
            f"--stack {name!r} is not a known software stack.",
            f"use one of {', '.join(levels())} (docs/predict.md says what each is).",
        )
    return found


__all__ = ["StackLevel", "default_level", "levels", "stack_level"]
