"""Issue 41's open questions, measured on a real GPU in about two minutes (JAX; no TensorFlow).

    python scripts/gpu_kernel_probe.py OUT_DIR            # on a GPU machine
    python scripts/gpu_kernel_probe.py OUT_DIR --cpu      # tiny shapes on the CPU: a smoke run

Five research passes (docs/research/issue-41-physics.md) left the per-stack DRAM traffic factors
on their x0.667 bound and named what only a GPU can tell:

1. **Convolutions' overlap.** The kernel model times a convolution as compute *plus* memory
   (its fitted overlap sits on the bound p = 1, fitted on FP32 kernels); do FP16 tensor-core
   convolutions overlap their traffic (time near max(compute, memory)) instead? Each ResNet-50
   convolution shape at batch 256 in FP16, NHWC, timed forward.
2. **Layout transposes.** NCHW stacks pay a transpose around each FP16 convolution; at what
   rate does a GPU move them (bytes a second and per SM-clock)? ResNet-50 activations, NCHW to
   NHWC.
3. **Large streaming kernels.** What share of the DRAM peak does a 0.1-0.4 GB elementwise
   kernel reach (the kernel model gives 0.87 on HBM boards, 0.75 on GDDR ones)?

Each result is written to OUT_DIR/kernel_probe.json with the shapes, FLOPs and bytes, so the
model can be compared offline; OUT_DIR/kernel_probe.md is the one-page table. Peaks come from
gpuscout's catalog row of the device (by the name the driver reports). Times are the median of
``--repeats`` calls after warm-up, each call synchronised (``block_until_ready``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

# ResNet-50's convolution shapes (NHWC input HxWxC, kernel, stride, output channels), one per
# kind: the stem, a 1x1 and 3x3 of each stage, and a downsampling 1x1.
CONVS = [
    (224, 224, 3, 7, 2, 64),
    (56, 56, 64, 1, 1, 64),
    (56, 56, 64, 3, 1, 64),
    (56, 56, 64, 1, 1, 256),
    (28, 28, 128, 3, 1, 128),
    (14, 14, 256, 3, 1, 256),
    (7, 7, 512, 3, 1, 512),
    (56, 56, 256, 1, 2, 512),
]
TRANSPOSES = [(56, 56, 256), (28, 28, 512), (14, 14, 1024), (112, 112, 64)]  # H, W, C
STREAM_GB = [0.1, 0.2, 0.4]


def _timed(fn: Any, *args: Any, repeats: int) -> float:
    """Median seconds of one synchronised call, after two warm-up calls (compilation)."""
    for _ in range(2):
        fn(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peaks() -> dict[str, Any]:
    """The device and its catalog peaks (None where the catalog does not know the device)."""
    import jax

    from gpuscout.catalog import load_catalog

    device = jax.devices()[0]
    gpu = load_catalog().find_device(str(getattr(device, "device_kind", "")))
    if gpu is None:
        return {"device": str(device), "gpu": None}
    tensor = gpu.fp16_tensor_fp32acc_tflops or gpu.fp16_tensor_fp16acc_tflops
    return {
        "device": str(device), "gpu": gpu.id, "sms": gpu.sm_count, "boost_mhz": gpu.boost_clock_mhz,
        "fp16_tensor_tflops": tensor, "dram_gb_per_s": gpu.memory_bandwidth_gb_per_s,
    }  # fmt: skip


def probe(batch: int, scale: int, repeats: int, few: bool = False) -> dict[str, Any]:
    """Every measurement; ``scale`` divides the spatial sizes and ``few`` keeps one shape of
    each kind (the CPU smoke run)."""
    import jax
    import jax.numpy as jnp

    peaks = _peaks()
    tflops, gbs = peaks.get("fp16_tensor_tflops"), peaks.get("dram_gb_per_s")
    key = jax.random.PRNGKey(0)
    convs = []
    for h, w, c, k, s, out in CONVS[1:2] if few else CONVS:
        h, w = max(h // scale, k), max(w // scale, k)
        x = jax.random.normal(key, (batch, h, w, c), jnp.float16)
        f = jax.random.normal(key, (k, k, c, out), jnp.float16)
        conv = jax.jit(lambda a, b, s=s: jax.lax.conv_general_dilated(
            a, b, (s, s), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))  # fmt: skip
        seconds = _timed(conv, x, f, repeats=repeats)
        oh, ow = -(-h // s), -(-w // s)
        flops = 2.0 * batch * oh * ow * out * k * k * c
        moved = 2.0 * (x.size + f.size + batch * oh * ow * out)  # bytes, FP16
        row: dict[str, Any] = {"shape": [h, w, c, k, s, out], "seconds": seconds,
                               "flops": flops, "bytes": moved}  # fmt: skip
        if tflops and gbs:
            compute, memory = flops / (tflops * 1e12), moved / (gbs * 1e9)
            row |= {"compute_s": compute, "memory_s": memory,
                    "vs_sum": seconds / (compute + memory),
                    "vs_max": seconds / max(compute, memory)}  # fmt: skip
        convs.append(row)
    transposes = []
    for h, w, c in TRANSPOSES[:1] if few else TRANSPOSES:
        h, w = max(h // scale, 1), max(w // scale, 1)
        x = jax.random.normal(key, (batch, c, h, w), jnp.float16)
        seconds = _timed(jax.jit(lambda a: jnp.transpose(a, (0, 2, 3, 1))), x, repeats=repeats)
        moved = 2.0 * 2 * x.size  # read and written once, FP16
        row = {"shape_nchw": [batch, c, h, w], "seconds": seconds, "bytes": moved,
               "gb_per_s": moved / seconds / 1e9}  # fmt: skip
        if gbs and peaks.get("sms") and peaks.get("boost_mhz"):
            row["share_of_dram_peak"] = row["gb_per_s"] / gbs
            row["bytes_per_sm_clock"] = moved / seconds / (peaks["sms"] * peaks["boost_mhz"] * 1e6)
        transposes.append(row)
    streams = []
    for gb in STREAM_GB[:1] if few else STREAM_GB:
        n = int(gb * 1e9 / 2 / scale**2)  # elements of FP16 read (a) and written (out)
        a = jnp.ones((n,), jnp.float16)
        seconds = _timed(jax.jit(lambda v: v * 1.5 + 1.0), a, repeats=repeats)
        moved = 2.0 * 2 * n
        row = {"gb_moved": moved / 1e9, "seconds": seconds, "gb_per_s": moved / seconds / 1e9}
        if gbs:
            row["share_of_dram_peak"] = row["gb_per_s"] / gbs
        streams.append(row)
    return {"peaks": peaks, "batch": batch, "convolutions": convs, "transposes": transposes,
            "streaming": streams, "jax": jax.__version__}  # fmt: skip


def page(found: dict[str, Any]) -> str:
    """The one-page Markdown summary."""
    p = found["peaks"]
    lines = [f"# Kernel probe: {p.get('gpu') or p['device']} (JAX {found['jax']})", "",
             "| convolution (H W C k s out) | ms | x (compute+memory) | x max(compute, memory) |",
             "|---|---:|---:|---:|"]  # fmt: skip
    for c in found["convolutions"]:
        lines.append(
            f"| {' '.join(map(str, c['shape']))} | {c['seconds'] * 1e3:.3f} | "
            f"{c.get('vs_sum', float('nan')):.2f} | {c.get('vs_max', float('nan')):.2f} |"
        )
    lines += ["", "| transpose NCHW->NHWC | GB/s | share of DRAM peak | B per SM-clock |",
              "|---|---:|---:|---:|"]  # fmt: skip
    for t in found["transposes"]:
        lines.append(
            f"| {'x'.join(map(str, t['shape_nchw']))} | {t['gb_per_s']:.0f} | "
            f"{t.get('share_of_dram_peak', float('nan')):.2f} | "
            f"{t.get('bytes_per_sm_clock', float('nan')):.1f} |"
        )
    lines += ["", "| streaming GB | GB/s | share of DRAM peak |", "|---:|---:|---:|"]
    for s in found["streaming"]:
        lines.append(
            f"| {s['gb_moved']:.2f} | {s['gb_per_s']:.0f} | "
            f"{s.get('share_of_dram_peak', float('nan')):.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--cpu", action="store_true", help="tiny shapes on the CPU (a smoke run)")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    found = probe(batch=2 if args.cpu else 256, scale=16 if args.cpu else 1,
                  repeats=2 if args.cpu else args.repeats, few=args.cpu)  # fmt: skip
    (args.out / "kernel_probe.json").write_text(json.dumps(found, indent=1) + "\n")
    (args.out / "kernel_probe.md").write_text(page(found))
    print(page(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
