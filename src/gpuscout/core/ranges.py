"""The bounded number types of every numeric option and input cell: argparse types whose errors
read the same everywhere ("must be above X and at most Y, got Z").

A module of their own, below the CLI, so that a stage that reads numbers from a file (audit's
claims) checks them against the same ranges as the options of the same names without
importing the command line (the layer rule, ``tests/test_layers.py``).
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

# ASCII digits only. ``str.isdigit()`` is true for '²' and '٣', and ``int()`` takes '٣', '1_000'
# and ' +7 ': a value from the environment or the command line is read by this pattern alone.
_DIGITS = re.compile(r"[0-9]+")


class NotWhole(ValueError):
    """What :func:`whole` refuses; ``out_of_range``: the digits were fine, the value was not
    (the callers say "must be ... got X" then, and "'X' is not a whole number" otherwise)."""

    def __init__(self, text: str, bounds: str, out_of_range: bool) -> None:
        self.text, self.bounds, self.out_of_range = text, bounds, out_of_range
        why = f"must be a whole number {bounds}" if out_of_range else "is not a whole number"
        super().__init__(why)


def whole(text: str, low: int, high: int) -> int:
    """``text`` as a whole number from ``low`` to ``high`` (both >= 0), or :class:`NotWhole`.

    The one parser of every count, rank, index and port that comes from outside (options,
    environment variables, stored text): ASCII digits, surrounding blanks allowed, nothing
    else (no sign, no '_', no superscript or other script's digits). The bounds are checked on
    the digits' length before ``int()`` runs, so a 100,000-digit value costs nothing and no
    caller builds anything from a number it has not bounded.
    """
    assert 0 <= low <= high
    bounds = f"at least {low:,} and at most {high:,}"
    digits = text.strip()
    if not _DIGITS.fullmatch(digits.removeprefix("-")):
        raise NotWhole(text, bounds, out_of_range=False)
    if digits.startswith("-"):  # a whole number, below every range here
        raise NotWhole(text, bounds, out_of_range=True)
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(high)) or not low <= int(significant) <= high:
        raise NotWhole(text, bounds, out_of_range=True)
    return int(significant)


class Range:
    """An argparse type whose values are bounded, finite numbers declared in
    ``cli/parser.py`` (and, for those audit's claims share, ``limits.py``).

    Every numeric option of the CLI takes one of these (``tests/cli/test_option_ranges.py``
    walks the parser and fails on a numeric option without one), so a new option cannot
    accept ``inf``, ``nan`` or a 300-digit number by default, and every range reads the same
    in its error: "must be above X and at most Y, got Z".
    """

    def __call__(self, text: str) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def bounds(self) -> str:
        """The range in words, as its error says it ("above 0 and at most 1e+06")."""
        raise NotImplementedError


def _g(value: float) -> str:
    return f"{value:g}"


def finite(text: str) -> float:
    """``text`` as a finite number: 'inf' and 'nan' parse as floats but mean nothing here."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


class FloatRange(Range):
    """A finite number from ``low`` to ``high``; each end excluded or included as declared."""

    def __init__(
        self, low: float, high: float, *, low_included: bool = False, high_included: bool = True
    ) -> None:
        assert math.isfinite(low) and math.isfinite(high) and low < high
        self.low, self.high = low, high
        self.low_included, self.high_included = low_included, high_included
        self.__name__ = f"number {self.bounds()}"  # argparse names a type by it

    def bounds(self) -> str:
        below = f"at least {_g(self.low)}" if self.low_included else f"above {_g(self.low)}"
        above = f"at most {_g(self.high)}" if self.high_included else f"below {_g(self.high)}"
        return f"{below} and {above}"

    def contains(self, value: float) -> bool:
        low_ok = value >= self.low if self.low_included else value > self.low
        high_ok = value <= self.high if self.high_included else value < self.high
        return low_ok and high_ok

    def __call__(self, text: str) -> float:
        value = finite(text)
        if not self.contains(value):
            raise argparse.ArgumentTypeError(f"must be {self.bounds()}, got {text}")
        return value


class IntRange(Range):
    """A whole number from ``low`` to ``high``, both included."""

    def __init__(self, low: int, high: int) -> None:
        assert low < high
        self.low, self.high = low, high
        self.__name__ = f"whole number {self.bounds()}"

    def bounds(self) -> str:
        return f"at least {self.low:,} and at most {self.high:,}"

    def __call__(self, text: str) -> int:
        try:
            return whole(text, self.low, self.high)
        except NotWhole as exc:  # also 'inf', '1e3', '²', '1_000' and 300-digit numbers
            if exc.out_of_range:
                raise argparse.ArgumentTypeError(f"{exc}, got {text}") from None
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None


def float_in(
    low: float, high: float, *, low_included: bool = False, high_included: bool = True
) -> FloatRange:
    """A finite number above ``low`` (or at least it) and at most ``high`` (or below it)."""
    return FloatRange(low, high, low_included=low_included, high_included=high_included)


def int_in(low: int, high: int) -> IntRange:
    """A whole number from ``low`` to ``high``, both included."""
    return IntRange(low, high)
