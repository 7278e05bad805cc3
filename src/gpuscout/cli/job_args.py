"""The options that name a training job, shared by ``advise`` and ``cost`` (and what
``scout``/``report`` may share): what trains (a workload, your model, a stored run) and how
much of it. Parsing only: ``gpuscout.predict.job.resolve_job`` gives them their meaning."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpuscout.cli.parser import BATCH, EPOCHS, RUN_ID, SAMPLES, STEPS, model_spec
from gpuscout.run_settings import PRECISIONS


def add_job_options(group: Any, workload_help: str) -> None:
    """--workload / --model / --from-run, the job's size, its batch and precision."""
    group.add_argument("--workload", help=workload_help)
    group.add_argument(
        "--model", type=model_spec, metavar="FILE.py:FUNCTION",
        help="your own Keras model: a file and the function that builds (and compiles) it, "
        "or FILE.keras; traced once with TensorFlow, then cached",
    )  # fmt: skip
    group.add_argument(
        "--from-run", type=RUN_ID, metavar="ID",
        help="the set-up of a stored run (its workload or model, batch per GPU, precision)",
    )  # fmt: skip
    group.add_argument(
        "--epochs", type=EPOCHS,
        help="epochs to train: of --samples samples each, or of the workload's own epoch "
        "(resnet50: 1,281,167 images)",
    )  # fmt: skip
    group.add_argument(
        "--samples", type=SAMPLES,
        help="with --epochs: the dataset's size (samples an epoch; needed for your own "
        "model); alone: the samples of the whole job",
    )  # fmt: skip
    group.add_argument(
        "--steps", type=STEPS,
        help="or the job as optimizer steps, each of one GPU's batch (--batch-size)",
    )  # fmt: skip
    group.add_argument(
        "-b", "--batch-size", type=BATCH,
        help="batch per GPU (default: the workload's; 32 for your model; a run's own)",
    )  # fmt: skip
    group.add_argument(
        "--precision", choices=PRECISIONS, default="mixed_float16",
        help="fp32 (TF32 tensor cores on Ampere and newer), mixed_float16 or mixed_bfloat16 "
        "(default mixed_float16; a stored run's own with --from-run)",
    )  # fmt: skip


def job_spec(args: argparse.Namespace) -> Any:
    """The JobSpec the options give (a stored run read from ``args.db``)."""
    from gpuscout.predict.job import JobSpec

    run = None
    if args.from_run is not None:
        from gpuscout.store import Store

        with Store(args.db, readonly=True) as store:
            run = store.get(args.from_run)
    return JobSpec(
        workload=args.workload,
        model=args.model,
        run=run,
        epochs=args.epochs,
        samples=math.ceil(args.samples) if args.samples is not None else None,
        steps=args.steps,
        batch_size=args.batch_size,
        precision=args.precision,
    )
