"""Names shared by the CLI and the records, kept free of heavy imports so ``--help`` is fast."""

PRECISIONS: tuple[str, ...] = ("fp32", "mixed_float16", "mixed_bfloat16")
LOOPS: tuple[str, ...] = ("custom", "fit")
