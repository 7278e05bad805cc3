"""Training FLOPs per sample of the workloads a claim can name.

They come from the workload registry (analytic counts, the same ones ``bench`` uses for MFU).
If the measuring package is not installed alongside, a small table of the same analytic counts
stands in; a test keeps the two equal. ``resnet50-v1.5`` (what NVIDIA's and Lambda's PyTorch
results train), ``bert-large`` and the GPT-2 sizes are built-in workloads of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.core.errors import UserError, did_you_mean


@dataclass(frozen=True)
class WorkloadFlops:
    name: str
    flops_per_sample: float
    epoch_samples: int
    epoch_unit: str  # "images", "sequences", ...
    note: str


def family(name: str) -> str:
    """Published results are compared within a family (any ResNet-50, any BERT)."""
    for prefix in ("resnet50", "bert", "gpt2"):
        if name.startswith(prefix):
            return prefix
    return name


# Fallback when gpuscout.measure is absent: the registry's analytic counts at default sizes.
FALLBACK: dict[str, WorkloadFlops] = {
    "resnet50": WorkloadFlops(
        "resnet50",
        23.147839488e9,
        1_281_167,
        "images",
        "analytic: 3.86 GMAC forward at 224 px (Keras ResNet50, v1) x 2 x 3",
    ),
    "resnet50-v1.5": WorkloadFlops(
        "resnet50-v1.5",
        24.535105536e9,
        1_281_167,
        "images",
        "analytic: 4.09 GMAC forward at 224 px (v1.5, stride on the 3x3 conv) x 2 x 3",
    ),
    "bert-base": WorkloadFlops(
        "bert-base",
        67.045303296e9,
        1_000_000,
        "sequences",
        "analytic: 6 x non-embedding parameters per token plus attention, sequence length 128",
    ),
}
NAMES = (
    "resnet50",
    "resnet50-v1.5",
    "bert-base",
    "bert-large",
    "gpt2",
    "gpt2-medium",
    "gpt2-large",
    "mlp",
    "cnn-small",
)


def workload_flops(name: str, seq_len: int | None = None) -> WorkloadFlops:
    """FLOPs per training sample for a workload name (and sequence length for BERT, GPT-2)."""
    try:
        from gpuscout.workloads import WORKLOADS
    except ImportError:  # catalog and audit shipped without the measuring code
        return _fallback(name, seq_len)
    if name not in WORKLOADS:
        raise _unknown(name)
    w = WORKLOADS[name]
    dims: dict[str, int] = {}
    if seq_len is not None:
        if "seq_len" not in w.dims:
            raise UserError(f"workload '{name}' has no sequence length.", "drop --seq-len.")
        dims["seq_len"] = seq_len
    resolved = w.resolve(dims)
    flops = w.training_flops_per_sample(resolved)
    assert flops is not None  # every built-in workload has an analytic count
    note = w.flops_note
    if "seq_len" in resolved:
        note += f", sequence length {resolved['seq_len']}"
    if name == "bert-large":
        note += " (BERT-large: 24 layers, hidden 1024, 16 heads, FFN 4096)"
    return WorkloadFlops(name, flops, w.epoch_samples, w.epoch_unit, note)


def _fallback(name: str, seq_len: int | None) -> WorkloadFlops:
    if name not in FALLBACK or seq_len is not None:
        raise UserError(
            f"no FLOP count for workload '{name}' without gpuscout's measuring code.",
            "install gpuscout in full, with its measuring code.",
        )
    return FALLBACK[name]


def _unknown(name: str) -> UserError:
    return UserError(
        f"unknown workload '{name}'.{did_you_mean(name, NAMES)}",
        f"use one of: {', '.join(NAMES)}.",
    )
