"""Names shared by the CLI and the records, kept free of heavy imports so ``--help`` is fast."""

from collections.abc import Mapping
from typing import Any, Literal, get_args

Precision = Literal["fp32", "mixed_float16", "mixed_bfloat16"]
Loop = Literal["custom", "fit"]

PRECISIONS: tuple[str, ...] = get_args(Precision)
LOOPS: tuple[str, ...] = get_args(Loop)
# The precision every command that predicts or prices training assumes when none is given
# (predict, advise, cost, report, scout, audit's job): one default, so one question gets one
# answer (before, ``predict`` said fp32 and the job commands mixed precision: an RTX 3090 read
# 575 images/s in one and 947 in the other). Mixed float16: what teams train with on every GPU
# since Volta (tensor cores), and what the published rows mostly measure. ``bench`` and
# ``doctor`` measure this machine and keep fp32 (a CPU has no 16-bit tensor units).
TRAINING_PRECISION = "mixed_float16"

# TF32: TensorFlow runs float32 matmuls and convolutions on TF32 tensor cores on Ampere and newer
# GPUs unless told not to (``--no-tf32``); PyTorch does not by default. It is a setting of the
# run, like XLA: stored in BenchConfig.tf32 (stored runs from before it existed read as True,
# TensorFlow's default) and read back from TensorFlow into the run's env (``tf32_enabled``).
TF32_ON = "TF32 tensor cores for float32 matmuls (TensorFlow's default)"
TF32_OFF = "matmuls in float32 on CUDA cores (TF32 off)"
# a plain PyTorch --model: on by gpuscout's default too, which is not PyTorch's own
TF32_ON_TORCH = (
    "TF32 tensor cores for float32 matmuls and convolutions (gpuscout's default, as bench sets "
    "it on PyTorch: torch.set_float32_matmul_precision('high'); PyTorch's own default is off: "
    "--no-tf32)"
)
TF32_HELP = (
    "TF32 tensor cores for float32 matmuls and convolutions on Ampere and newer GPUs "
    "(default: on, TensorFlow's default; --no-tf32 runs them in float32 on CUDA cores, as "
    "PyTorch does by default)"
)


def tf32_prediction_note(precision: str, tf32: bool, backend: str = "tensorflow") -> str | None:
    """What the TF32 setting means for a prediction, or None where it means nothing to say.

    Only float32 matmuls use TF32: under mixed precision the matmuls are FP16/BF16 whatever the
    switch says, so ``--no-tf32`` there is accepted but said to change nothing for them. On
    ``torch`` the default is said as gpuscout's: PyTorch itself leaves TF32 off.
    """
    if precision == "fp32":
        if not tf32:
            return TF32_OFF
        return TF32_ON_TORCH if backend == "torch" else TF32_ON
    if not tf32:
        return (
            f"TF32 off: changes nothing for the matmuls, which run in "
            f"{'bfloat16' if precision == 'mixed_bfloat16' else 'float16'} on tensor cores with "
            f"{precision} (TF32 only applies to float32 matmuls)"
        )
    return None


def tf32_run_note(
    enabled: bool, precision: str, device_kind: str, compute_capability: tuple[int, int] | None
) -> str | None:
    """One line on what TF32 did in a measured run, or None where nothing needs saying.

    ``enabled``: TensorFlow's switch as read back in the measuring process. A setting that
    changes nothing on the device (a CPU, a GPU older than Ampere) is recorded anyway and said
    to change nothing, rather than refused: the same command line runs on every machine.
    """
    capable = device_kind == "GPU" and (compute_capability or (0, 0)) >= (8, 0)
    if enabled:
        if capable and precision == "fp32":
            return "TF32 is on for fp32 matmuls/convs (TensorFlow's default; --no-tf32 to turn off)"
        return None
    if device_kind != "GPU":
        return "--no-tf32 changes nothing on a CPU (TF32 is a GPU tensor-core mode); recorded"
    if not capable:
        cc = ".".join(str(n) for n in compute_capability or (0, 0))
        return (
            f"--no-tf32 changes nothing on this GPU (compute capability {cc}: no TF32 tensor "
            "cores, float32 runs on CUDA cores anyway); recorded"
        )
    if precision == "fp32":
        return "TF32 off (--no-tf32): fp32 matmuls/convs on CUDA cores, as PyTorch's default"
    return (
        f"TF32 off (--no-tf32): the matmuls run in {precision.removeprefix('mixed_')} on "
        "tensor cores anyway; only float32 ops left in the model are affected"
    )


def ran_with_tf32(env: Mapping[str, Any], asked: bool) -> bool:
    """A stored run's TF32 switch: as read back from TensorFlow where its env recorded it
    (``tf32_enabled``), else as asked (its config's ``tf32``, which a run stored before the
    setting existed reads as True, TensorFlow's default)."""
    return bool(env.get("tf32_enabled", asked))
