"""``gpuscout doctor``: input-bound or device-bound, and each fix's measured speedup."""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from typing import Any

from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    SECONDS,
    SEED,
    SEQ_LEN,
    STEPS,
    add_backend_option,
    model_spec,
    precision_help,
)
from gpuscout.core.run_settings import PRECISIONS
from gpuscout.workloads import WORKLOADS


def add_target_options(p: argparse.ArgumentParser, data: bool = True) -> None:
    """What to run and how, shared by doctor and soak."""
    what = p.add_argument_group("what to run")
    what.add_argument(
        "--workload", "-w", default="mlp",
        help=f"a built-in workload (default mlp): {', '.join(WORKLOADS)}; input-bound-demo "
        "is the seed MLP behind a deliberately slow input pipeline",
    )  # fmt: skip
    what.add_argument(
        "--model",
        type=model_spec,
        help="your model: FILE.py:FUNCTION (returns a keras.Model) or FILE.keras",
    )
    if data:
        what.add_argument(
            "--data",
            help="your data: FILE.py:FUNCTION returning a batched tf.data.Dataset (on --backend "
            "jax or torch: an iterable of (x, y) NumPy batches, e.g. a keras.utils.PyDataset); "
            "it may "
            "take keyword arguments prefetch, parallel, cache to apply those fixes itself",
        )
    what.add_argument(
        "--seq-len", type=SEQ_LEN,
        help="sequence length in tokens (bert-*: default 128; gpt2*: default 1024, the most)",
    )  # fmt: skip
    how = p.add_argument_group("how")
    how.add_argument("--precision", choices=PRECISIONS, default="fp32", help=precision_help("fp32"))
    how.add_argument(
        "--xla", action=argparse.BooleanOptionalAction, default=False,
        help="compile the step with XLA (default: off; every --backend jax step is compiled "
        "by XLA anyway)",
    )  # fmt: skip
    how.add_argument(
        "--batch-size", "-b", type=BATCH,
        help="samples per step (default: the workload's, always printed)",
    )  # fmt: skip
    how.add_argument("--device", help="CPU:0, GPU:1, ... (default: first GPU, else CPU:0)")
    how.add_argument(
        "--seed", type=SEED, default=0,
        help="seeds the initial weights and the synthetic data (default 0)",
    )  # fmt: skip
    add_backend_option(how, "trains")


def target_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The fields of a DoctorConfig or SoakConfig that :func:`add_target_options` declared."""
    return {
        "workload": args.workload,
        "model": args.model,
        "precision": args.precision,
        "xla": args.xla,
        "batch_size": args.batch_size,
        "device": args.device,
        "dims": {"seq_len": args.seq_len} if args.seq_len else {},
        "seed": args.seed,
        "backend": args.backend,
    }


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="is training input-bound or device-bound, and what does each fix gain (measured)",
        description="Time the data pipeline alone, the step alone and the two together; then "
        "try each fix (prefetch, parallel map, cache, mixed precision, XLA, the compiled step: "
        "tf.function or jax.jit, the largest batch that fits), measure it, and rank them with "
        "the code to apply each. On --backend jax and torch the data are NumPy batches made on the "
        "host.",
    )
    add_target_options(p)
    m = p.add_argument_group("measuring")
    m.add_argument(
        "--seconds",
        type=SECONDS,
        default=8.0,
        help="time per measurement (default 8; about 12 measurements in all)",
    )
    m.add_argument("--steps", type=STEPS, help="steps per measurement instead of --seconds")
    m.add_argument("--max-batch", type=BATCH, help="largest batch to try (default 8x the batch)")
    m.add_argument(
        "--skip", default="",
        help="fixes not to try, a comma list of: prefetch, parallel map, cache, mixed "
        "precision, XLA, tf.function (jax.jit on --backend jax, torch.compile on --backend torch), "
        "batch size; e.g. "
        "--skip 'XLA,batch size' (default: try every fix)",
    )  # fmt: skip
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the report as one JSON object")
    out.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpuscout.diagnose.doctor import diagnose
    from gpuscout.diagnose.records import DoctorConfig
    from gpuscout.report.console import stdout_console
    from gpuscout.report.doctor_view import print_doctor

    config = DoctorConfig(
        **target_fields(args),
        data=args.data,
        seconds=args.seconds,
        steps=args.steps,
        max_batch=args.max_batch,
        skip=[s.strip() for s in args.skip.split(",") if s.strip()],
    )
    err = Console(stderr=True)
    live = err.is_terminal and not args.quiet and not args.json
    with err.status("doctor: starting", spinner="dots") if live else nullcontext() as status:

        def show(text: str) -> None:
            if status is not None:
                status.update(f"doctor: {text}")

        report = diagnose(config, on_phase=show)
    if args.json:
        data = report.model_dump(mode="json")
        data = {"verdict": report.verdict, **data}
        print_json(data)
    else:
        print_doctor(report, stdout_console())
    return 0
