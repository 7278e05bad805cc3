"""What profiling a decoder LLM's fine-tuning step costs: time and peak host memory.

``predict`` traces the step of the ``llama-*`` workloads on JAX from shapes alone (no weight,
optimizer moment or batch is allocated: ``measure/backends/jax/hlo.abstract_step_hlo``) and
counts its HLO. Each case runs in a fresh interpreter, as a user's first ``predict`` would, and
reports the trace-and-count time (from the child's own clock, JAX's import excluded) and the
process's peak resident memory (``ru_maxrss``, import included) beside the memory the same
step's weights and optimizer state would take if they were built (what the TensorFlow tracer
would allocate).

    python benchmarks/llm_profiles.py            # llama-3.1-8b and llama-2-7b, full and LoRA
                                                 # (8B LoRA also checkpointed)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CASES = [
    ("llama-3.1-8b", {}, "mixed_bfloat16"),
    ("llama-3.1-8b", {"lora_rank": 64}, "mixed_bfloat16"),
    ("llama-3.1-8b", {"lora_rank": 64, "checkpointing": 1}, "mixed_bfloat16"),
    ("llama-2-7b", {}, "mixed_bfloat16"),
    ("llama-2-7b", {"lora_rank": 64}, "mixed_bfloat16"),
]
BATCH = 1

_CHILD = """
import json, resource, sys, time
from gpuscout.measure.backends.jax.runtime import import_jax, keras_on_jax
import_jax(); keras_on_jax()
from gpuscout.predict.hlo import step_cost
from gpuscout.measure.backends.jax.hlo import abstract_step_hlo
from gpuscout.workloads import get_workload
from gpuscout.workloads.llm import weight_state_bytes
name, dims, precision, batch = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
start = time.perf_counter()
ir = abstract_step_hlo(name, dims, batch, precision)
traced = time.perf_counter() - start
cost = step_cost(ir.hlo, forward_scope=ir.model_name)
print(json.dumps({"trace_s": traced, "count_s": time.perf_counter() - start - traced,
                  "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                  "hlo_mb": len(ir.hlo) / 1e6, "tflop": cost.flops["matmul"] / 1e12,
                  "built_gb": weight_state_bytes(get_workload(name).resolve(dims)) / 1e9}))
"""


def main() -> None:
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    print(f"{'case':<34} {'trace':>7} {'count':>7} {'peak RSS':>9} {'HLO':>8} {'matmul':>10} "
          f"{'if built':>9}")  # fmt: skip
    for name, dims, precision in CASES:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, name, json.dumps(dims), precision, str(BATCH)],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        label = f"{name} {'LoRA r64' if dims.get('lora_rank') else 'full'}"
        label += " ckpt" if dims.get("checkpointing") else f" {precision}"
        print(f"{label:<34} {r['trace_s']:6.1f}s {r['count_s']:6.1f}s {r['peak_gb']:7.2f}GB "
              f"{r['hlo_mb']:6.1f}MB {r['tflop']:7.1f}TF {r['built_gb']:7.0f}GB")  # fmt: skip
    print(
        f"batch {BATCH}, sequence 2,048; 'if built': weights, gradients and AdamW state in "
        "float32, what building the model to trace it would allocate"
    )


if __name__ == "__main__":
    main()
