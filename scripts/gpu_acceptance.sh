#!/usr/bin/env bash
# The GPU acceptance run: gpuscout's measurement, monitor and predictions on a real GPU, through
# the JAX backend (a machine with JAX and NVML but no TensorFlow, and no network, is enough).
#
#   scripts/gpu_acceptance.sh OUT_DIR [--wheels DIR] [--seconds N] [--cpu]
#
# 1. installs gpuscout from this checkout with its JAX extra (Keras), and whatever the machine
#    lacks from the wheels in --wheels DIR (pip --no-index: no network is used; make DIR with
#    scripts/gpu_wheels.sh); nothing where gpuscout is already importable (PYTHONPATH);
# 2. measures mlp, resnet50 and bert-base on JAX in mixed_bfloat16, --seconds each (60), and
#    one inference sweep (resnet50, batches 1, 8, 32, 128, 40 s), with the NVML monitor on;
#    every result is kept as JSON in OUT_DIR and in OUT_DIR/runs.sqlite;
# 3. checks each run (scripts/gpu_acceptance_check.py): the device is named and in the catalog,
#    MFU is in (0, 1) (a missing synchronisation shows as an impossible MFU), the allocator's
#    peak memory and the monitor's utilisation, SM clock and power are there, and the
#    measurement is compared with `gpuscout predict`'s range for that GPU;
# 4. writes OUT_DIR/summary.md, one page. Exit 1 if a check failed;
# 5. where PyTorch is installed: a plain PyTorch model (examples/models/torch_cnn.py, and on a
#    GPU torch_resnet50.py at batch 128 mixed_float16, eager and with --compile), measured by
#    bench's PyTorch backend and checked the same way, against `predict --model`'s range;
# 6. before the checks, scripts/gpu_kernel_probe.py: issue 41's open kernel questions
#    (FP16 convolutions' overlap, NCHW->NHWC transpose rate, large streaming kernels), in
#    OUT_DIR/kernel_probe.md and .json; it never fails the run.
#
# --cpu: the same run on this machine's CPU, minus the GPU checks, with mlp alone (a CPU
# takes minutes to compile and step resnet50 and bert-base), 20 steps, and an mlp sweep: CI runs
# it so every part but the GPU is exercised. The whole run stays under 8 minutes on a GPU.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="" wheels="" seconds=60 cpu=0
while (($#)); do
    case "$1" in
        --wheels|--seconds)
            (($# > 1)) || { echo "gpu_acceptance: $1 needs a value (see --help)" >&2; exit 2; }
            if [ "$1" = --wheels ]; then wheels="$2"; else seconds="$2"; fi
            shift 2 ;;
        --cpu) cpu=1; shift ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        -*) echo "gpu_acceptance: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) out="$1"; shift ;;
    esac
done
[ -n "$out" ] || { echo "gpu_acceptance: give the output folder: $0 OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
python="${PYTHON:-python3}"
if ! "$python" -c "import gpuscout" 2>/dev/null; then
    if [ -n "$wheels" ]; then
        # offline: the wheels folder holds what the machine lacks (keras, pydantic, rich, ...);
        # the build uses the machine's own setuptools, as none can be downloaded
        "$python" -m pip install -q --no-index --find-links "$wheels" --no-build-isolation \
            -e "$here[jax]"
    else
        "$python" -m pip install -q -e "$here[jax]"
    fi
fi
"$python" -c "import jax" 2>/dev/null || {
    echo "gpu_acceptance: JAX is not installed: pip install 'gpuscout[jax]' (jax[cuda12] or" \
         "jax[cuda13] on a GPU), or carry its wheels in --wheels" >&2
    exit 2
}
if ((cpu)); then  # a fixed few steps: a CPU spends a short budget compiling
    workloads="mlp" budget=(--steps 20 --warmup-steps 3 --device CPU:0)
    sweep=(--workload mlp --batch-sizes 1,8 --seconds 2 --device CPU:0)
else
    workloads="mlp resnet50 bert-base" budget=(--seconds "$seconds")
    sweep=(--workload resnet50 --batch-sizes 1,8,32,128 --seconds 40)
fi
db="$out/runs.sqlite"
for w in $workloads; do
    echo "gpu_acceptance: measuring $w (${budget[*]})" >&2
    "$python" -m gpuscout bench --backend jax --workload "$w" --precision mixed_bfloat16 \
        "${budget[@]}" --db "$db" --json > "$out/$w.json" ||
        echo "gpu_acceptance: $w did not measure (its JSON says why)" >&2
done
echo "gpu_acceptance: inference sweep (${sweep[*]})" >&2
"$python" -m gpuscout bench --backend jax --mode inference --precision mixed_bfloat16 \
    "${sweep[@]}" --db "$db" --json > "$out/inference.json" ||
    echo "gpu_acceptance: the inference sweep did not measure (its JSON says why)" >&2
# PyTorch (issue 44): a plain torch.nn.Module, eager and compiled, where torch imports
torch_runs=""
if "$python" -c "import torch" 2>/dev/null; then
    if ((cpu)); then
        torch_jobs=("torch_cnn examples/models/torch_cnn.py:build --precision mixed_bfloat16 -b 16")
    else
        torch_jobs=(
            "torch_cnn examples/models/torch_cnn.py:build --precision mixed_bfloat16 -b 256"
            "torch_resnet50 examples/models/torch_resnet50.py:build --precision mixed_float16 -b 128"
            "torch_resnet50_compiled examples/models/torch_resnet50.py:build --precision mixed_float16 -b 128 --compile"
        )
    fi
    for job in "${torch_jobs[@]}"; do
        read -r name spec rest <<< "$job"
        echo "gpu_acceptance: measuring $name on PyTorch (${budget[*]})" >&2
        # shellcheck disable=SC2086  # $rest: the job's own options, word-split on purpose
        (cd "$here" && "$python" -m gpuscout bench --model "$spec" $rest "${budget[@]}" \
            --db "$db" --json) > "$out/$name.json" ||
            echo "gpu_acceptance: $name did not measure (its JSON says why)" >&2
        torch_runs+=" $name"
    done
else
    echo "gpu_acceptance: PyTorch is not installed: its step is skipped" >&2
fi
# issue 41's open questions, measured (about 2 minutes on a GPU; never fails the run)
echo "gpu_acceptance: kernel probe (convolution overlap, layout transposes, streaming)" >&2
probe=("$out")
((cpu)) && probe+=(--cpu)
"$python" "$here/scripts/gpu_kernel_probe.py" "${probe[@]}" > /dev/null ||
    echo "gpu_acceptance: the kernel probe did not finish" >&2
check=(--out "$out")
((cpu)) && check+=(--cpu)
# shellcheck disable=SC2086  # the run names, one word each
(cd "$here" && "$python" "$here/scripts/gpu_acceptance_check.py" "${check[@]}" $workloads \
    inference $torch_runs)
