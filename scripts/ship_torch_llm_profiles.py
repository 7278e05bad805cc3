"""Capture the plain-PyTorch decoder's training step at the published fine-tuning rows' shapes,
shipped in ``src/gpuscout/predict/data/profiles_torch_llm.json`` (under "/torch" keys).

``examples/models/torch_llama.py`` at each shape the fine-tuning check predicts
(``predict/finetuning_rows.profile_shapes``: model, sequence, LoRA rank, checkpointing,
precision), built on the meta device and captured from torch under ``FakeTensorMode``
(``predict/finetuning_torch.capture``) at the shape's largest batch and half of it, so
``Profile.at_batch`` gives each row's batch. Needs torch (CPU is enough: nothing runs). Each
shape takes about a minute on 2 cores. Run after changing the module, the capture or the HLO
counting.

    python scripts/ship_torch_llm_profiles.py

Apart from ``profiles.json`` (``scripts/ship_profiles.py``): each script rewrites its own file.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gpuscout.catalog import load_catalog
from gpuscout.predict.finetuning_rows import profile_shapes
from gpuscout.predict.finetuning_torch import MODULE, capture
from gpuscout.workloads import get_workload

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gpuscout" / "predict" / "data" / "profiles_torch_llm.json"


def main() -> None:
    profiles: dict[str, dict] = {}  # type: ignore[type-arg]
    for workload, dims, batch, precision in profile_shapes(load_catalog()):
        start = time.perf_counter()
        resolved = get_workload(workload).resolve(dims)
        profile = capture(workload, resolved, batch, batch // 2, precision, ROOT / MODULE)
        profiles[profile.key] = profile.model_dump(mode="json")
        # one profile a line: diffs stay readable; written after each, so a stopped run keeps
        # what it captured
        OUT.write_text("[\n" + ",\n".join(json.dumps(p) for p in profiles.values()) + "\n]\n")
        print(f"{profile.key}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(f"wrote {len(profiles)} profiles to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
