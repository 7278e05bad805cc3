"""argparse with one-line errors and value types that explain themselves."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments print one line naming the problem and where help is, exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(
            f"{self.prog}: error: {message}. To fix: see '{self.prog} --help'.",
            file=sys.stderr,
        )
        sys.exit(2)


def _whole_number(text: str, minimum: int, maximum: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"from {minimum:,} to {maximum:,}"
        raise argparse.ArgumentTypeError(f"must be a whole number {bound}, got {text}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    return _whole_number(text, 0)


def positive_ints(text: str) -> list[int]:
    """'1,8,32' -> [1, 8, 32]: at least one, each a whole number >= 1, no repeats."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"'{text}' names no sizes; give e.g. 1,8,32")
    values = [positive_int(t) for t in items]
    return list(dict.fromkeys(values))


def _finite(text: str) -> float:
    """``text`` as a finite number: 'inf' and 'nan' parse as floats but mean nothing here."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (no option of gpuscout has a use for infinity)."""
    value = _finite(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def float_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number above ``low`` (excluded) and up to ``high``.

    Every bounded numeric option of the CLI is built here, so the ranges live in one place
    and read the same in every error.
    """

    def parse(text: str) -> float:
        value = _finite(text)
        if not low < value <= high:
            raise argparse.ArgumentTypeError(
                f"must be above {low:g} and at most {high:g}, got {text}"
            )
        return value

    parse.__name__ = f"number in ({low:g}, {high:g}]"
    return parse


# The ranges of the options bounded so far (the rest take any finite positive number).
SOAK_MINUTES = float_in(0.0, 7 * 24 * 60.0)  # a week: longer soaks are several runs
EPOCHS = float_in(0.0, 1e6)  # a million epochs: past any real training job
SAMPLES = float_in(0.0, 1e15)  # a million epochs of ImageNet-1k is 1.3e12
GPU_HOURS = float_in(0.0, 1e9)  # a billion GPU-hours: 114,000 GPU-years, past any job
