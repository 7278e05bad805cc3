"""Published fine-tuning throughput of 7-8B decoders, and how gpuscout reads each row.

``data/published_finetuning.csv`` holds the rows as their sources print them (each with
repo@commit and path), plus columns of gpuscout's: ``assumed``, the settings a row does not
state and where gpuscout read them instead (a recipe's default config at a stored commit), and
``kernels``, whether its software fuses the model's elementwise ops or runs them one by one
(read from the row's code or table, said in ``assumed``). They
are the validation rows ``docs/predict.md`` reports the decoder prediction's error on. The
sources issue 41 reserves as the project's external test are not here at all: the project
keeps them, and nothing shipped may be designed or tuned on them.

No row is in any fit: the kernel model and the calibration learn from ResNet-50 and BERT rows
(``catalog/data/v1/published_training.csv``), so every row here is out of sample, held out by
source as a whole. A row gpuscout cannot predict is left out with its reason (``excluded``):
a precision it does not model (FP8), a sequence beyond the model's context, a setting nobody
states, or a throughput that implies more TFLOP/s than the GPU has.
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.catalog import Catalog, peak_tflops
from gpuscout.workloads import get_workload
from gpuscout.workloads.llm import llama_forward_macs

# Llama-3-8B and Llama-3.1-8B share every shape (config.json); 3.1 only rescales RoPE's
# frequencies for long contexts, which changes no work
_WORKLOADS = {"llama-3-8b": "llama-3.1-8b", "llama-3.1-8b": "llama-3.1-8b",
              "llama-2-7b": "llama-2-7b"}  # fmt: skip
# A source's precision as a Keras policy: torchtune's "bf16" holds the weights in bfloat16 where
# mixed_bfloat16 keeps float32 masters, the same bfloat16 math in every matmul; FP8 is not a
# precision gpuscout predicts
_POLICIES = {"bf16": "mixed_bfloat16", "mixed_bfloat16": "mixed_bfloat16",
             "mixed_float16": "mixed_float16"}  # fmt: skip


class FinetuneRow(BaseModel):
    """One published measurement, as its source states it (``assumed``: what gpuscout read
    elsewhere because the source does not say)."""

    model_config = ConfigDict(frozen=True)

    source_id: str
    source: str
    software: str
    model: str
    mode: Literal["full", "lora", "qlora"]
    lora_rank: int | None = None
    seq_len: int = Field(gt=0)
    precision: str
    gpu_id: str
    gpu_count: int = Field(gt=0)
    batch_size_per_gpu: int | None = None
    checkpointing: bool | None = None
    parallelism: Literal["single", "ddp", "fsdp", "zero3", "deepspeed"]
    attention: str = ""
    # how the row's software runs the model's elementwise ops: fused (torch.compile, XLA,
    # fused library kernels) or op by op (eager PyTorch on a model written as tensor ops), as
    # its source or its code shows (the csv's ``assumed`` says where each was read)
    kernels: Literal["fused", "op-by-op"]
    throughput: float = Field(gt=0)
    unit: Literal["tokens/s", "tokens/s/GPU"]
    assumed: str = ""
    note: str = ""

    @property
    def tokens_per_gpu(self) -> float:
        """Published tokens/s of one GPU (a total is divided by the GPU count)."""
        return self.throughput / (self.gpu_count if self.unit == "tokens/s" else 1)

    @property
    def workload(self) -> str | None:
        return _WORKLOADS.get(self.model)

    @property
    def policy(self) -> str | None:
        return _POLICIES.get(self.precision)

    @property
    def label(self) -> str:
        mode = f"LoRA r{self.lora_rank}" if self.mode == "lora" else self.mode
        mode = f"QLoRA r{self.lora_rank}" if self.mode == "qlora" else mode
        gpus = f"{self.gpu_count}x " if self.gpu_count > 1 else ""
        return (f"{self.source_id}: {self.model} {mode}, {gpus}{self.gpu_id}, seq "
                f"{self.seq_len:,}, batch {self.batch_size_per_gpu}")  # fmt: skip


def _optional(value: str) -> str | None:
    return value or None


@cache
def load_rows() -> tuple[FinetuneRow, ...]:
    """The shipped rows, validated (a bad row is a packaging bug, raised as such)."""
    text = resources.files("gpuscout.predict").joinpath("data/published_finetuning.csv")
    rows = []
    with text.open(encoding="utf-8") as f:
        for raw in csv.DictReader(f):
            fields = {k: v for k, v in raw.items() if k in FinetuneRow.model_fields}
            for optional in ("lora_rank", "batch_size_per_gpu"):
                fields[optional] = _optional(raw[optional])
            fields["checkpointing"] = {"on": True, "off": False}.get(raw["checkpointing"])
            rows.append(FinetuneRow.model_validate(fields))
    return tuple(rows)


def dims_of(row: FinetuneRow) -> dict[str, int]:
    """The workload settings a row trained with (QLoRA's adapters as LoRA's)."""
    return {"seq_len": row.seq_len, "lora_rank": row.lora_rank or 0,
            "checkpointing": int(bool(row.checkpointing))}  # fmt: skip


def implied_tflops(row: FinetuneRow) -> float:
    """TFLOP/s one GPU must sustain for the published tokens/s: the linear layers' work only
    (attention left out, a lower bound whatever its kernel), x 3 for full fine-tuning and x 2
    for the frozen base of LoRA (no weight gradient), plus one more forward pass where the
    row checkpoints."""
    d = {**get_workload(row.workload or "llama-3.1-8b").dims, **dims_of(row)}
    base, _, adapters = llama_forward_macs(d)
    passes = (2 if d["lora_rank"] else 3) + (1 if row.checkpointing else 0)
    flops = 2.0 * (passes * base + 3 * adapters) / row.seq_len  # per token
    return flops * row.tokens_per_gpu / 1e12


def excluded(row: FinetuneRow, catalog: Catalog) -> str | None:
    """Why gpuscout cannot predict this row, or None."""
    if row.workload is None:
        return f"{row.model} is not a gpuscout workload"
    if row.policy is None:
        return f"{row.precision} is not a precision gpuscout predicts"
    w = get_workload(row.workload)
    context = w.max_dims["seq_len"][0]
    if row.seq_len > context:
        return (f"sequence {row.seq_len:,} is beyond {row.workload}'s {context:,}-token "
                "context, which gpuscout refuses")  # fmt: skip
    if row.batch_size_per_gpu is None:
        return "the batch per GPU is not published"
    gpu = catalog.gpus[row.gpu_id]
    peak, _ = peak_tflops(gpu, row.policy)
    needed = implied_tflops(row)
    if needed > peak:
        return (
            f"implies {needed:.1f} TFLOP/s per GPU with the settings read, above the "
            f"{gpu.id}'s {peak:.1f} dense peak: not a possible reading of this row"
        )
    return None


def profile_shapes(catalog: Catalog) -> list[tuple[str, dict[str, int], int, str]]:
    """(workload, dims, batch, precision) of the profiles the predictable rows need, each
    traced at the largest batch of its rows (at least 2, so a second trace at half of it
    teaches ``Profile.at_batch`` the rest): what ``scripts/ship_profiles.py`` ships."""
    largest: dict[tuple[str, tuple[tuple[str, int], ...], str], int] = {}
    for row in load_rows():
        if excluded(row, catalog) or not (row.workload and row.policy):
            continue
        key = (row.workload, tuple(sorted(dims_of(row).items())), row.policy)
        largest[key] = max(largest.get(key, 2), row.batch_size_per_gpu or 2)
    return [(w, dict(d), batch, p) for (w, d, p), batch in sorted(largest.items())]
