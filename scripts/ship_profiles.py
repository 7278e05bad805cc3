"""Regenerate the cost profiles shipped in ``src/gpuscout/predict/data/profiles.json``.

The built-in workloads at the sizes the published calibration data and the default ``predict``
use; needs TensorFlow (CPU is enough: nothing runs, the step is only traced). Takes a few
minutes. Run after changing a model builder, the train step or the HLO counting.

    python scripts/ship_profiles.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gpuscout.predict.profile import compute
from gpuscout.workloads import BERT_LARGE

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
    ("bert-base", {}, 32),
    ("bert-base", {"seq_len": 384}, 32),
    ("bert-base", {**BERT_LARGE, "seq_len": 384}, 32),
]


def main() -> None:
    profiles = []
    for workload, dims, batch in SHAPES:
        for precision in PRECISIONS:
            start = time.perf_counter()
            profile = compute(workload, dims, batch, precision)
            profiles.append(profile.model_dump(mode="json"))
            took = time.perf_counter() - start
            print(f"{profile.key}: {took:.0f} s", file=sys.stderr)
    OUT.write_text(json.dumps(profiles, indent=1) + "\n")
    print(f"wrote {len(profiles)} profiles to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
