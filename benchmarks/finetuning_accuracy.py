"""How far the decoder-LLM prediction is from published fine-tuning throughput (issue 33).

Every row of ``src/gpuscout/predict/data/published_finetuning.csv`` that gpuscout can predict
is predicted as ``gpuscout predict`` answers it (its model, mode, LoRA rank, sequence, batch per
GPU, precision, gradient checkpointing and GPU count) and compared in tokens/s per GPU; the
others are named with why they are left out. No row is in any fit, so every figure is out of
sample by whole source. The sources issue 41 reserves as the project's external test are not
among the rows: the project runs that test on what lands.

    python benchmarks/finetuning_accuracy.py           # print
    python benchmarks/finetuning_accuracy.py --write   # and store the summary predict shows
                                                       # (predict/data/finetuning_accuracy.json)
    python benchmarks/finetuning_accuracy.py --traced torch   # each row from the decoder
        # written in plain PyTorch (examples/models/torch_llama.py), captured from torch, and
        # beside it the JAX-traced figures (never --write)

Uses the shipped profiles (``scripts/ship_profiles.py`` traces the rows' shapes,
``scripts/ship_torch_llm_profiles.py`` captures them from torch); a shape not shipped is traced
on JAX first (seconds to a minute each), or captured from torch (a minute each).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict.finetuning_check import Checked, Summary, check, summarize, write
from gpuscout.predict.finetuning_rows import load_rows
from gpuscout.predict.finetuning_torch import MODULE

ROOT = Path(__file__).resolve().parents[1]


def _table(checked: list[Checked]) -> None:
    print(f"  {'row':78} {'published':>9} {'predicted':>9} {'ratio':>6}  range")
    for c in checked:
        inside = "inside" if c.inside else "outside"
        print(f"  {c.row.label:78} {c.row.tokens_per_gpu:9,.0f} {c.predicted:9,.0f} "
              f"{c.ratio:6.2f}  {c.low:,.0f}-{c.high:,.0f} ({inside})")  # fmt: skip


def _summary(name: str, s: Summary) -> None:
    rel = (f"{s.relative_mape:.1%} over {s.relative_pairs} rows" if s.relative_mape is not None
           else "no two GPUs of one source")  # fmt: skip
    print(f"{name}: {s.rows} rows, {s.sources} sources, GPUs {', '.join(s.gpus)}")
    print(
        f"  tokens/s per GPU off by {s.mape:.1%} on average (median ratio {s.median_ratio:.2f});"
        f" {s.inside_range:.0%} inside their range; relative to the source's other GPUs: {rel}"
    )
    print("  by source: " + ", ".join(f"{k} {v:.1%}" for k, v in s.by_source.items()))
    print("  by mode: " + ", ".join(f"{k} {v:.1%}" for k, v in s.by_mode.items()))


def _beside(torch: list[Checked], jax: list[Checked]) -> None:
    """Each row's ratio from the two steps, side by side."""
    print("\neach row, predicted / published, from each step:")
    print(f"  {'row':78} {'JAX-traced':>10} {'torch-captured':>14}")
    for t, j in zip(torch, jax, strict=True):
        print(f"  {t.row.label:78} {j.ratio:10.2f} {t.ratio:14.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="store the summary predict shows")
    parser.add_argument(
        "--traced",
        choices=("jax", "torch"),
        default="jax",
        help="whose step models the rows: the Keras decoder traced on JAX (shipped, stored), "
        f"or the decoder in plain PyTorch ({MODULE}) captured from torch, printed beside it",
    )
    args = parser.parse_args()
    if args.write and args.traced != "jax":
        parser.error("--write stores the JAX-traced figures predict shows; drop --traced torch")
    start = time.perf_counter()
    catalog = load_catalog()
    rows = load_rows()
    checked, left = check(list(rows), catalog)
    if args.traced == "torch":
        captured, _ = check(list(rows), catalog, "torch", ROOT / MODULE)
        print("\nvalidation rows from the plain-PyTorch decoder's captured step "
              "(predicted / published, tokens/s per GPU):")  # fmt: skip
        _table(captured)
        _beside(captured, checked)
    else:
        print("\nvalidation rows (predicted / published, tokens/s per GPU):")
        _table(checked)
    for line in left:
        print(f"  left out: {line}")
    summary = summarize(checked)
    _summary("validation, JAX-traced" if args.traced == "torch" else "validation", summary)
    if args.traced == "torch":
        _summary("validation, torch-captured", summarize(captured))
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if args.write:
        print(f"wrote {write(summary)}")


if __name__ == "__main__":
    main()
