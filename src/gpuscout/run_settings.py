"""Names shared by the CLI and the records, kept free of heavy imports so ``--help`` is fast."""

from typing import Literal, get_args

Precision = Literal["fp32", "mixed_float16", "mixed_bfloat16"]
Loop = Literal["custom", "fit"]

PRECISIONS: tuple[str, ...] = get_args(Precision)
LOOPS: tuple[str, ...] = get_args(Loop)
