"""How far the decoder-LLM prediction is from published fine-tuning throughput.

Each published row (``finetuning_rows.py``) is predicted as ``gpuscout predict`` would answer
it, at its own model, mode, LoRA rank, sequence, batch, precision, checkpointing and GPU count,
and compared per GPU. No row was used to fit or design anything, so the figures are out of
sample by whole source; they give the error ``predict`` reports for the decoder workloads.

``benchmarks/finetuning_accuracy.py`` prints them and ``--write`` stores the summary in
``predict/data/finetuning_accuracy.json`` (what ``predict`` says of its range); a test
recomputes it from the shipped profiles. ``traced="torch"`` models each row from the decoder
written in plain PyTorch and captured from torch instead (``finetuning_torch.py``): printed
apart, never stored.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpuscout.catalog import Catalog
from gpuscout.predict.finetuning_rows import FinetuneRow, dims_of, excluded
from gpuscout.predict.finetuning_summary import Summary, range_note, shipped, write


@dataclass(frozen=True)
class Checked:
    """One row predicted: tokens/s per GPU, and the range predict gives."""

    row: FinetuneRow
    predicted: float
    low: float
    high: float

    @property
    def ratio(self) -> float:
        return self.predicted / self.row.tokens_per_gpu

    @property
    def inside(self) -> bool:
        return self.low <= self.row.tokens_per_gpu <= self.high


# Rows whose weights are sharded over their GPUs, all-gathered every step (PyTorch FSDP
# FULL_SHARD, DeepSpeed ZeRO-3): the csv's ``parallelism``. fsdp_qlora's "ddp" rows are FSDP
# NO_SHARD (full weights on each GPU); xtuner's "deepspeed" rows do not state a ZeRO stage.
SHARDED = ("fsdp", "zero3")

# Every published fine-tuning row runs on PyTorch (torchtune, xtuner, Answer.AI's fsdp_qlora on
# PyTorch FSDP, NeMo: the csv's framework column), so each is predicted as a user
# of that stack asks it, ``--stack pytorch``: a published stack at its own level (issue 41).
ROWS_STACK = "pytorch"


# Whose step models the rows: the Keras decoder traced on JAX from shapes (what is shipped and
# stored), or the decoder written in plain PyTorch and captured from torch
Traced = Literal["jax", "torch"]


def predict_row(
    row: FinetuneRow, traced: Traced = "jax", catalog: Catalog | None = None,
    module: Path | None = None,
) -> Checked:  # fmt: skip
    """``gpuscout predict`` for the row's settings (its profile shipped or traced on JAX; with
    ``traced="torch"`` the plain-PyTorch decoder's captured step, shipped, cached or captured
    from ``module``), at the rows' own software stack (``ROWS_STACK``), its weights sharded
    where the row's are (``SHARDED``; a QLoRA row's base all-gathered in 4 bits), its step run
    op by op where the row's software runs the model's tensor ops eagerly (the csv's
    ``kernels``, ``--op-by-op``)."""
    from gpuscout.predict.request import PredictRequest, predict_for

    assert row.workload is not None and row.policy is not None and row.batch_size_per_gpu
    d = dims_of(row)
    profile = None
    if traced == "torch":
        from gpuscout.catalog import load_catalog
        from gpuscout.predict.finetuning_torch import row_profile

        profile = row_profile(row, catalog or load_catalog(), module)
    answer = predict_for(
        PredictRequest(
            gpus=row.gpu_id,
            workload=row.workload,
            precision=row.policy,
            batch_size=row.batch_size_per_gpu,
            seq_len=row.seq_len,
            lora_rank=d["lora_rank"] or None,
            checkpointing=bool(d["checkpointing"]),
            counts=[(1, row.gpu_count)],
            stack=ROWS_STACK,
            sharded=row.parallelism in SHARDED,
            four_bit_base=row.mode == "qlora",
            op_by_op=row.kernels == "op-by-op",
        ),
        profile,
    )
    r = answer.rows[0]
    per = row.seq_len / row.gpu_count
    return Checked(row, r.samples_per_second * per, r.low * per, r.high * per)


def check(
    rows: Sequence[FinetuneRow], catalog: Catalog, traced: Traced = "jax",
    module: Path | None = None,
) -> tuple[list[Checked], list[str]]:  # fmt: skip
    """Every row predicted (from ``traced``'s step, see ``predict_row``), or named with why it
    is left out."""
    done, left = [], []
    for row in rows:
        why = excluded(row, catalog)
        if why:
            left.append(f"{row.label}: {why}")
        else:
            done.append(predict_row(row, traced, catalog, module))
    return done, left


def mape(ratios: Sequence[float]) -> float:
    return statistics.fmean(abs(r - 1) for r in ratios) if ratios else float("nan")


def _relative(checked: Sequence[Checked]) -> list[float]:
    """Each row's ratio over the geometric mean ratio of its group's other GPUs (same source,
    mode, batch, sequence, GPU count and parallelism, another GPU): what a ranking of GPUs
    depends on."""
    out = []
    for c in checked:
        r = c.row
        mates = [m.ratio for m in checked
                 if m is not c and m.row.gpu_id != r.gpu_id and m.row.source_id == r.source_id
                 and m.row.mode == r.mode and m.row.seq_len == r.seq_len
                 and m.row.batch_size_per_gpu == r.batch_size_per_gpu
                 and m.row.gpu_count == r.gpu_count
                 and m.row.parallelism == r.parallelism]  # fmt: skip
        if mates:
            mean = math.exp(statistics.fmean(math.log(m) for m in mates))
            out.append(c.ratio / mean)
    return out


def summarize(checked: Sequence[Checked]) -> Summary:
    """The error on these checked rows."""
    rel = _relative(checked)
    sources = sorted({c.row.source_id for c in checked})
    modes = sorted({c.row.mode for c in checked})
    return Summary(
        rows=len(checked),
        sources=len(sources),
        gpus=sorted({c.row.gpu_id for c in checked}),
        mape=mape([c.ratio for c in checked]),
        median_ratio=statistics.median(c.ratio for c in checked),
        inside_range=statistics.fmean(c.inside for c in checked),
        relative_mape=mape(rel) if rel else None,
        relative_pairs=len(rel),
        by_source={s: mape([c.ratio for c in checked if c.row.source_id == s]) for s in sources},
        by_mode={m: mape([c.ratio for c in checked if c.row.mode == m]) for m in modes},
    )


__all__ = [
    "Checked",
    "Summary",
    "Traced",
    "check",
    "mape",
    "predict_row",
    "range_note",
    "shipped",
    "summarize",
    "write",
]
