"""argparse with one-line errors and value types that explain themselves."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments print one line naming the problem and where help is, exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(
            f"{self.prog}: error: {message}. To fix: see '{self.prog} --help'.",
            file=sys.stderr,
        )
        sys.exit(2)


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {value}")
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


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value
