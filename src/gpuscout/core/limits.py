"""What a request may ask of this machine, or of any GPU, checked before anything starts.

Two kinds of request used to run away: ``launch --workers 1000`` started hundreds of
TensorFlow processes on a 2-core machine until memory ran out, and ``predict`` traced a step
whose activations no GPU could ever hold (a 9 GB graph for ``--seq-len 1000000``) before
failing with a traceback. Both are refused here, in one line that says why and what to change,
before a process starts or TensorFlow is imported. The figures and their basis live here only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from gpuscout.core.errors import UserError
from gpuscout.core.ranges import float_in, int_in
from gpuscout.workloads.llm import LLAMA_WORKLOADS

if TYPE_CHECKING:
    from gpuscout.catalog import Catalog

# Peak resident memory of one launched worker of 'bench --workload mlp --steps 20' (the
# smallest workload): its 'gpuscout bench' process (141 MB) plus its measuring child (766 MB),
# TensorFlow 2.21 on CPU, measured with psutil on Linux x86-64 ('launch --workers 2'). A floor:
# bigger models need more.
WORKER_BYTES = 0.9e9
# More workers than this per CPU core measure contention, not training: each worker runs
# TensorFlow's own thread pools besides the gRPC server of its collectives.
WORKERS_PER_CORE = 4
# Even with --force: each worker holds a loopback port and a process pair; past this the launch
# would run out of file descriptors before it ran out of anything it measures.
MAX_WORKERS = 256
# Devices of one machine, for --devices N and device numbers in --devices CPU:0,CPU:1: a CPU
# device numbered N splits the host into N + 1 devices (JAX), so a typo must not ask for 100,000.
MAX_DEVICES = 1_024

# The ranges of the options whose numbers a claims file gives too (audit/claims.py checks its
# cells against them; cli/parser.py declares the options): declared once, here, below both.
EPOCH_SAMPLES = int_in(1, 10**15)  # the largest corpora are ~1.5e13 tokens
SEQ_LEN = int_in(1, 10**7)  # ten million tokens: past any context length in use
CLAIM_GPUS = int_in(1, 10**6)  # a million GPUs: past the largest cluster
EPOCH_SECONDS = float_in(1e-3, 1e9)  # a millisecond to 31 years per epoch
SAMPLES_PER_SECOND = float_in(1e-6, 1e12)  # per claim, all its GPUs together

Dims = Mapping[str, int]


def _gb(n: float) -> str:
    """Decimal gigabytes, as GPU memory is quoted in the catalog."""
    return f"{n / 1e9:,.0f} GB" if n >= 10e9 else f"{n / 1e9:.2g} GB"


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, e.g. a container's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_workers(workers: int, available_bytes: float, cores: int, force: bool = False) -> None:
    """UserError when ``workers`` local workers cannot fit in memory or share the cores
    (``force``: start them anyway), or exceed ``MAX_WORKERS`` (always).

    Memory first: a machine out of memory freezes (swap, the OOM killer), while too many
    workers per core only measure badly.
    """
    if not force:
        need = workers * WORKER_BYTES
        if need > available_bytes:
            # The count suggested must pass both checks, not only this one.
            fit = min(int(available_bytes // WORKER_BYTES), WORKERS_PER_CORE * cores)
            raise UserError(
                f"--workers {workers} needs at least {_gb(need)} of memory "
                f"({_gb(WORKER_BYTES)} per worker: the peak of one 'bench --workload mlp' "
                f"worker with TensorFlow on CPU) but {_gb(available_bytes)} is available.",
                f"run at most {fit} workers here, or pass --force to start them anyway.",
            )
        if workers > WORKERS_PER_CORE * cores:
            raise UserError(
                f"--workers {workers} on {cores} CPU core(s): more than {WORKERS_PER_CORE} "
                "workers per core measure contention, not training.",
                f"run at most {WORKERS_PER_CORE * cores} workers here, or pass --force to "
                "start them anyway.",
            )
    if workers > MAX_WORKERS:
        raise UserError(
            f"--workers {workers}: 'gpuscout launch' starts at most {MAX_WORKERS} workers on "
            "one machine (--force included).",
            f"pass --workers {MAX_WORKERS} or fewer.",
        )


# Per sample, the element counts of tensors a training step of each built-in workload must
# keep for its backward pass (a subset of what Keras keeps: layer outputs only, no masks,
# no inputs, no gradients). A floor: the traced figure (predict/data/profiles.json) is 1.15x
# to 3.3x more (a test holds them to it).
def _dense(d: Dims) -> list[int]:
    return [d["hidden"], d["classes"]]


def _cnn_small(d: Dims) -> list[int]:
    s, f = d["image_size"], d["filters"]
    s2, s4 = s // 2, s // 4
    return [s * s * f, s2 * s2 * 2 * f, s4 * s4 * 2 * f, 128]  # convs, last pool, dense


def _resnet50(d: Dims, stride_on_3x3: bool = False) -> list[int]:
    """Each conv's output in Keras' ResNet50 (v1), shapes as ``workloads.resnet50_forward_macs``;
    ``stride_on_3x3``: v1.5's, whose downsampling blocks keep their first 1x1 conv's output
    at the input's resolution."""
    s = (d["image_size"] + 6 - 7) // 2 + 1
    out = [s * s * 64]
    s = (s + 2 - 3) // 2 + 1
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            s_in = s
            s = -(-s // (2 if block == 0 and stage > 0 else 1))
            reduce = s_in if stride_on_3x3 else s
            out += [reduce * reduce * width, s * s * width, s * s * 4 * width]
    return [*out, d["classes"]]


def _resnet50_v15(d: Dims) -> list[int]:
    return _resnet50(d, stride_on_3x3=True)


def _bert(d: Dims) -> list[int]:
    """Per layer: Q, K, V, the attention probabilities (heads x L x L), the attended values,
    the output projection, the feed-forward's hidden and output."""
    length, h, heads, ffn = d["seq_len"], d["hidden"], d["heads"], d["ffn"]
    qkv = [length * h] * 3
    layer = [*qkv, heads * length * length, length * h, length * h, length * ffn]
    return [*layer, length * h] * d["layers"]


def _gpt2(d: Dims) -> list[int]:
    """bert's per-layer tensors, plus the logits over the vocabulary at every position (the
    softmax's gradient needs them): at GPT-2's vocabulary of 50,257 the largest tensor."""
    return [*_bert(d), d["seq_len"] * d["vocab"]]


def _llama(d: Dims) -> list[int]:
    """Per layer: the normed input, Q, K, V (K and V at the key/value heads' width), the
    attended values and the attention's output; the MLP's normed input, gate, up and their
    product. Then the logits over the vocabulary. Not the attention probabilities (heads x L x
    L): a fused attention kernel keeps none (XLA's unfused one does, above this floor). With
    gradient checkpointing, each layer's input, one layer's activations and the logits."""
    length, h, ffn = d["seq_len"], d["hidden"], d["ffn"]
    kv = d["kv_heads"] * (h // d["heads"])
    layer = [length * h, length * h, length * kv, length * kv, length * h, length * h,
             length * h, length * ffn, length * ffn, length * ffn]  # fmt: skip
    if d.get("checkpointing"):
        return [*([length * h] * d["layers"]), *layer, length * d["vocab"]]
    return [*(layer * d["layers"]), length * d["vocab"]]


_KEPT: dict[str, Callable[[Dims], list[int]]] = {
    "mlp": _dense,
    "input-bound-demo": _dense,
    "cnn-small": _cnn_small,
    "resnet50": _resnet50,
    "resnet50-v1.5": _resnet50_v15,
    "bert-base": _bert,
    "bert-large": _bert,
    "gpt2": _gpt2,
    "gpt2-medium": _gpt2,
    "gpt2-large": _gpt2,
    **{w.name: _llama for w in LLAMA_WORKLOADS},
}


def host_is_the_device(device: str | None) -> bool:
    """Whether a measurement's weights live in this machine's memory: ``--device CPU...``, or
    no NVIDIA driver loaded (TensorFlow and JAX then train on the CPU)."""
    if device is not None:
        return device.upper().startswith("CPU")
    return not os.path.exists("/proc/driver/nvidia/version")


def check_fits_host(
    workload: str, dims: Dims, precision: str, available_bytes: float, fix: str
) -> None:
    """UserError (with ``fix``) when a workload's weights, gradients and optimizer state alone
    exceed the memory available on this machine (for the decoder LLMs, whose size is known
    before any weight exists): building it, to train it or to trace its step, would push the
    machine into swap or the OOM killer long before anything is measured or counted."""
    from gpuscout.workloads.llm import LLAMA_NAMES, weight_state_bytes

    if workload not in LLAMA_NAMES:
        return
    need = weight_state_bytes(dims, precision)
    if need <= available_bytes:
        return
    how = f"LoRA rank {dims['lora_rank']}" if dims.get("lora_rank") else "every weight trained"
    raise UserError(
        f"{workload} ({how}, {precision}) holds {_gb(need)} of weights, gradients and AdamW "
        f"state before any activation, but this machine has {_gb(available_bytes)} available.",
        fix,
    )


def activation_floor(workload: str, dims: Dims, batch: int, precision: str, kind: str) -> float:
    """Bytes of activations a step needs at least: for ``kind`` "train", every tensor kept for
    the backward pass; for "forward", the largest one (it must exist at once). 0 if unknown.

    Mixed precision keeps activations in 16 bits, fp32 in 32.
    """
    kept = _KEPT.get(workload)
    if kept is None:
        return 0.0
    sizes = kept(dims)
    per_sample = sum(sizes) if kind == "train" else max(sizes)
    return float(per_sample) * batch * (4 if precision == "fp32" else 2)


def check_fits_a_gpu(
    workload: str, dims: Dims, batch: int, precision: str, kind: str, catalog: Catalog
) -> None:
    """UserError when the activations alone exceed the largest GPU of ``catalog``.

    Checked before the step is traced: a trace at such sizes takes minutes and gigabytes of
    host memory to say nothing useful.
    """
    need = activation_floor(workload, dims, batch, precision, kind)
    largest = max(catalog.gpus.values(), key=lambda g: g.memory_gb)
    gpu, memory_gb = largest.id, largest.memory_gb
    if need <= memory_gb * 1e9:
        return
    per_sample = need / batch
    fit = int(memory_gb * 1e9 // per_sample)
    what = "for its backward pass" if kind == "train" else "in its largest layer output"
    length = f", sequence length {dims['seq_len']:,}" if "seq_len" in dims else ""
    lower = (
        f"lower --batch-size, below {fit:,} at the very least (this floor counts layer outputs "
        "only; a traced step keeps 1.2-3.3x more)"
        if fit >= 1
        else "lower --seq-len (one sample alone does not fit)"
    )
    raise UserError(
        f"{workload} at batch {batch:,}{length} ({precision}) keeps at least {_gb(need)} of "
        f"activations {what}, more than the largest GPU in the catalog ({gpu}, "
        f"{memory_gb:g} GB) holds.",
        f"{lower}.",
    )
