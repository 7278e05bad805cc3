"""Regenerate the cost profiles shipped in ``src/gpuscout/predict/data/profiles.json``.

The built-in workloads at the sizes the published calibration data and the default ``predict``
use; needs TensorFlow, and JAX for the decoder LLMs (CPU is enough: nothing runs, the step is
only traced). Each step is
traced at its batch and at half of it, so the profile learns how every kernel grows with the
batch and ``Profile.at_batch`` models each published row at its own batch size without
TensorFlow. Takes several minutes. Run after changing a model builder, the train step or the
HLO counting.

    python scripts/ship_profiles.py                    # every shape (about 30 min on 2 cores)
    python scripts/ship_profiles.py --only gpt2,bert-large   # those workloads' shapes, merged
    python scripts/ship_profiles.py --finetuning             # the fine-tuning rows' shapes
    python scripts/ship_profiles.py --torch   # the plain-PyTorch reference models (minutes)

Also the shapes of the published fine-tuning rows ``predict``'s decoder check uses
(``predict/finetuning_rows.profile_shapes``), in their own precision.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict.finetuning_rows import profile_shapes
from gpuscout.predict.profile_trace import compute
from gpuscout.workloads import BERT_LARGE
from gpuscout.workloads.llm import JOBS, LLAMA_NAMES

OUT = (
    Path(__file__).resolve().parents[1] / "src" / "gpuscout" / "predict" / "data" / "profiles.json"
)
PRECISIONS = ("fp32", "mixed_float16", "mixed_bfloat16")
# (workload, dims, batch): defaults, plus the shapes of the published measurements
# (SQuAD fine-tuning at sequence length 384; BERT-large).
SHAPES = [
    ("mlp", {}, 256),
    ("cnn-small", {}, 256),
    ("resnet50", {}, 256),
    # v1.5, the ResNet-50 most published rows train (predict/data/resnet50_variants.csv)
    ("resnet50-v1.5", {}, 256),
    ("bert-base", {}, 32),
    ("bert-base", {"seq_len": 384}, 32),
    ("bert-base", {**BERT_LARGE, "seq_len": 384}, 32),
    ("bert-large", {"seq_len": 384}, 32),
    ("gpt2", {}, 8),
    # The decoder LLMs at their default sequence (2,048) and batch, fine-tuned fully and with
    # LoRA (rank 64): traced on JAX from shapes alone (predict/profile_trace.tracing_backend),
    # seconds each and half a gigabyte, where TensorFlow would build 32 GB of weights.
    ("llama-3.1-8b", {}, 4),
    ("llama-3.1-8b", {"lora_rank": 64}, 4),
    ("llama-2-7b", {}, 4),
    ("llama-2-7b", {"lora_rank": 64}, 4),
]
# The published PyTorch rows' networks written in plain PyTorch (examples/models/torch_*.py),
# traced from torch and shipped under their own "/torch" keys beside the Keras-traced ones:
# (workload, dims, the module building it, batch, second batch for the per-sample growth):
# the Keras-traced profiles' batches, so the two compare at the same batch; at_batch rescales
# both to each row's own. Captured under FakeTensorMode: seconds each on a CPU.
TORCH_PRECISIONS = ("fp32", "mixed_float16")  # the published PyTorch rows' precisions
TORCH_SHAPES = [
    ("resnet50-v1.5", {}, "examples/models/torch_resnet50.py:build", 256, 128),
    ("bert-base", {"seq_len": 384}, "examples/models/torch_bert.py:build_squad", 32, 16),
    ("bert-large", {"seq_len": 384}, "examples/models/torch_bert.py:build_large_squad", 32, 16),
]
# gpt2-medium and gpt2-large are not shipped: tracing them takes more than 20 GB of memory
# (gpt2-medium's fp32 trace alone filled a 24 GB machine); predict traces them on demand.


def _write(profiles: dict[str, dict]) -> None:  # type: ignore[type-arg]
    # One profile per line: diffs stay readable, the file stays small.
    OUT.write_text("[\n" + ",\n".join(json.dumps(p) for p in profiles.values()) + "\n]\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma list of workloads to trace again (others kept)")
    parser.add_argument(
        "--finetuning",
        action="store_true",
        help="only the published fine-tuning rows' shapes (others kept)",
    )
    parser.add_argument(
        "--torch",
        action="store_true",
        help="only the plain-PyTorch reference models, traced from torch (others kept)",
    )
    args = parser.parse_args()
    if args.torch:
        _ship_torch()
        return
    only = set(args.only.split(",")) if args.only else None
    if args.finetuning:
        only = only or set(LLAMA_NAMES)
    from gpuscout.predict.profile import Profile

    profiles: dict[str, dict] = {}  # type: ignore[type-arg]
    if only is not None and OUT.exists():
        for raw in json.loads(OUT.read_text()):
            profiles[Profile.model_validate(raw).key] = raw
    shapes = [] if args.finetuning else [(w, d, b, p) for w, d, b in SHAPES for p in PRECISIONS]
    # the named fine-tuning jobs (scout --job llm-lora-8b), in 16-bit
    shapes += [(w, d, 4, p) for w, d, _, _ in JOBS.values()
               for p in ("mixed_float16", "mixed_bfloat16")]  # fmt: skip
    # the shapes of the published fine-tuning rows predict is checked on, in their precision
    shapes += profile_shapes(load_catalog())
    for workload, dims, batch, precision in shapes:
        if only is not None and workload not in only:
            continue
        start = time.perf_counter()
        profile = compute(workload, dims, batch, precision, scale_from=batch // 2)
        profiles[profile.key] = profile.model_dump(mode="json")
        _write(profiles)  # after each: a long run that stops keeps what it traced
        took = time.perf_counter() - start
        print(f"{profile.key}: {took:.0f} s", file=sys.stderr)
    print(f"wrote {len(profiles)} profiles to {OUT}", file=sys.stderr)


def _ship_torch() -> None:
    """The TORCH_SHAPES' profiles, traced from torch, merged into the shipped ones."""
    from gpuscout.predict.profile import Profile
    from gpuscout.predict.profile_trace import compute_from_module

    root = Path(__file__).resolve().parents[1]
    profiles = {Profile.model_validate(raw).key: raw for raw in json.loads(OUT.read_text())}
    for workload, dims, module, batch, other in TORCH_SHAPES:
        for precision in TORCH_PRECISIONS:
            start = time.perf_counter()
            spec = str(root / module)
            profile = compute_from_module(workload, dims, spec, batch, precision, other)
            # the method names the module by its path in the repository, not this machine's
            method = profile.method.replace(spec, module)
            profile = profile.model_copy(update={"method": method})
            profiles[profile.key] = profile.model_dump(mode="json")
            _write(profiles)
            print(f"{profile.key}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(f"wrote {len(profiles)} profiles to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
