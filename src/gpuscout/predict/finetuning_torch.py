"""The published fine-tuning rows modelled from a plain-PyTorch decoder's captured step (issue 44)
rather than from the Keras decoder traced on JAX.

``examples/models/torch_llama.py`` writes the decoder workloads in plain PyTorch (RMSNorm, RoPE,
SwiGLU, grouped-query SDPA, PEFT-style LoRA, per-block ``torch.utils.checkpoint``); its shape
builders (``build_llama_2_7b_s2048_r64_ckpt`` and the like) build it on the meta device, and
the torch backend captures its training step under ``FakeTensorMode``
(``measure/backends/torch/capture.py``): an 8B step at 2,048 tokens in about 25 s on a CPU and
0.4 GB, nothing allocated. Each row's step is captured at its model, sequence, LoRA rank,
precision and checkpointing, with its attention fused (SDPA) unless the row's ``attention``
says it ran unfused, at the largest batch of its shape and at half of it, so the profile
rescales to each row's batch exactly (``Profile.at_batch``); everything else (stack, sharding,
op by op, GPU count) is predicted as ``finetuning_check.predict_row`` does.

The profiles are shipped in ``data/profiles_torch_llm.json`` under "/torch" keys
(``scripts/ship_torch_llm_profiles.py``) and cached once traced; tracing one needs torch and
the module's file, which a checkout has (``benchmarks/finetuning_accuracy.py --traced torch``).
An unfused row's step is traced every time and neither cached nor shipped: a profile's key
does not tell the attention apart.
"""

from __future__ import annotations

from pathlib import Path

from gpuscout.catalog import Catalog
from gpuscout.core.errors import UserError
from gpuscout.predict.finetuning_rows import FinetuneRow, dims_of, profile_shapes
from gpuscout.predict.profile import Profile, cached, store
from gpuscout.workloads import get_workload

# The module that writes the decoder in plain PyTorch, from a checkout's root
MODULE = "examples/models/torch_llama.py"


def fused(row: FinetuneRow) -> bool:
    """Whether the row's attention ran as a fused kernel: all do but one whose ``attention``
    says unfused (a row that names none ran its recipe's default: SDPA or flash-attention)."""
    return "unfused" not in row.attention.lower()


def builder_name(workload: str, dims: dict[str, int], fused_attention: bool = True) -> str:
    """The shape builder ``torch_llama.py`` makes on request for these sizes (its ``SHAPE``)."""
    stem = workload.replace("-", "_").replace(".", "_")
    name = f"build_{stem}_s{dims['seq_len']}_r{dims['lora_rank']}"
    return (
        name
        + ("_ckpt" if dims.get("checkpointing") else "")
        + ("" if fused_attention else "_unfused")
    )


def traced_batches(row: FinetuneRow, catalog: Catalog) -> tuple[int, int]:
    """The batches the row's shape is captured at: the largest of its shape's rows (at least
    2) and half of it, as the Keras-traced profiles are (``profile_shapes``)."""
    assert row.workload is not None and row.policy is not None
    d = dims_of(row)
    for workload, dims, batch, precision in profile_shapes(catalog):
        if (workload, dims, precision) == (row.workload, d, row.policy):
            return batch, batch // 2
    largest = max(2, row.batch_size_per_gpu or 2)  # a row profile_shapes leaves out
    return largest, largest // 2


def row_profile(row: FinetuneRow, catalog: Catalog, module: Path | None) -> Profile:
    """The row's step captured from the plain-PyTorch decoder, at the row's batch: shipped,
    cached, or captured now from ``module`` (``MODULE`` in a checkout) and cached."""
    assert row.workload is not None and row.policy is not None and row.batch_size_per_gpu
    dims = get_workload(row.workload).resolve(dims_of(row))
    batch, half = traced_batches(row, catalog)
    keyed = fused(row)  # an unfused step would take the fused one's key: never cached
    found = cached(row.workload, dims, row.batch_size_per_gpu, row.policy, backend="torch")
    found = found or cached(row.workload, dims, batch, row.policy, backend="torch")
    if found is None or not keyed:
        if module is None:
            raise UserError(
                f"{row.label}: no PyTorch-captured profile of its step is shipped or cached.",
                f"run from a checkout, where {MODULE} is: python benchmarks/"
                "finetuning_accuracy.py --traced torch.",
            )
        found = capture(row.workload, dims, batch, half, row.policy, module, fused(row))
        if keyed:
            store(found)
    return found.at_batch(row.batch_size_per_gpu)


def capture(
    workload: str, dims: dict[str, int], batch: int, half: int, precision: str, module: Path,
    fused_attention: bool = True,
) -> Profile:  # fmt: skip
    """The decoder's step captured at ``batch`` and ``half`` (the growth per sample), in the
    torch backend's bounded child; its method names the module by ``MODULE``, not this
    machine's path."""
    from gpuscout.predict.profile_trace import compute_from_module

    spec = f"{module}:{builder_name(workload, dims, fused_attention)}"
    profile = compute_from_module(workload, dims, spec, batch, precision, half)
    method = profile.method.replace(str(module), MODULE)
    if not fused_attention:
        method += "; attention unfused (Hugging Face's eager attention: scores, mask, softmax)"
    return profile.model_copy(update={"method": method})


__all__ = ["MODULE", "builder_name", "capture", "fused", "row_profile", "traced_batches"]
