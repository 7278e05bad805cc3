"""``gpuscout bench``: measure training speed, store the run, print it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.cli.cluster_args import add_cluster_args, resolve_cluster
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    BATCHES,
    CONCURRENCIES,
    DEVICE_COUNTS,
    EPOCH_SAMPLES,
    LORA_RANK,
    RATE,
    SECONDS,
    SEED,
    SEQ_LEN,
    SLO_MS,
    STEPS,
    TASK_INDEX,
    WARMUP_STEPS,
    WORKER_TIMEOUT,
    add_backend_option,
    devices,
    model_spec,
    precision_help,
    resolved_backend,
)
from gpuscout.core.errors import UserError
from gpuscout.core.run_settings import LOOPS, PRECISIONS, TF32_HELP
from gpuscout.core.text import printable
from gpuscout.workloads.llm import LORA_RANK as LLM_LORA_RANK

if TYPE_CHECKING:
    from gpuscout.core.records import BenchConfig, RunResult
    from gpuscout.store import Store

DEFAULT_SECONDS = 60.0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="training speed (or serving latency: --mode inference) of a workload or your model",
        description="Measure training speed with warm-up detection and a 95% confidence "
        "interval; the run is stored (see 'gpuscout runs').",
    )
    what = p.add_argument_group("what to measure")
    what.add_argument(
        "--workload",
        "-w",
        default="mlp",
        help="a built-in workload: mlp (default), cnn-small, resnet50, resnet50-v1.5, "
        "bert-base, bert-large, gpt2, gpt2-medium, gpt2-large",
    )
    what.add_argument(
        "--model",
        type=model_spec,
        help="your model: FILE.py:FUNCTION returning a keras.Model or a plain torch.nn.Module "
        "(docs/torch.md), or FILE.keras",
    )
    what.add_argument(
        "--data",
        help="your data: FILE.py:FUNCTION returning a batched tf.data.Dataset (on --backend "
        "jax: any iterable of (x, y) NumPy batches, e.g. a generator or keras.utils.PyDataset)",
    )
    what.add_argument(
        "--seq-len",
        type=SEQ_LEN,
        help="sequence length (bert-*: default 128; gpt2*: 1024, the most; llama-*: 2048)",
    )
    what.add_argument(
        "--lora-rank", type=LORA_RANK, metavar="R",
        help=f"--mode lora: the adapters' rank (default {LLM_LORA_RANK}, the QLoRA paper's)",
    )  # fmt: skip
    what.add_argument(
        "--epoch-samples", type=EPOCH_SAMPLES,
        help="samples in one epoch, to project epoch time, e.g. 1281167 for ImageNet-1k "
        "(default: the workload's own dataset)",
    )  # fmt: skip
    how = p.add_argument_group("how")
    how.add_argument(
        "--loop",
        choices=LOOPS,
        default="custom",
        help="custom: gpuscout's own compiled step (tf.function + GradientTape, or jax.jit; "
        "default); fit: Keras model.fit, as most training scripts run",
    )
    how.add_argument("--precision", choices=PRECISIONS, default="fp32", help=precision_help("fp32"))
    add_backend_option(how, "runs")
    how.add_argument(
        "--xla",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="compile the step with XLA (default: off)",
    )
    how.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                     help="compile a plain PyTorch --model's step with torch.compile (Inductor; "
                     "default: off, eager)")  # fmt: skip
    how.add_argument("--channels-last", action="store_true",
                     help="a plain PyTorch --model and its 4-D inputs in torch.channels_last "
                     "memory format (NHWC; default: the model's own)")  # fmt: skip
    how.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True, help=TF32_HELP)
    how.add_argument(
        "--batch-size",
        "-b",
        type=BATCH,
        help="samples per step (default: per workload and device, always printed)",
    )
    how.add_argument("--device", help="CPU:0, GPU:1, ... (default: first GPU, else CPU:0)")
    scale = p.add_argument_group(
        "data parallel (TensorFlow's MirroredStrategy / MultiWorkerMirroredStrategy; on "
        "--backend jax, --devices is a jax.sharding Mesh)"
    )
    scale.add_argument(
        "--devices",
        type=devices,
        help="train on N devices (a count: GPUs, else logical CPU devices) or a list "
        "GPU:0,GPU:1; --batch-size is then per replica",
    )
    scale.add_argument(
        "--global-batch-size",
        type=BATCH,
        help="samples per step over all replicas (instead of --batch-size per replica)",
    )
    scale.add_argument(
        "--scaling",
        type=DEVICE_COUNTS,
        metavar="COUNTS",
        help="measure each device count in turn, e.g. 1,2,4, with scaling efficiency",
    )
    scale.add_argument(
        "--workers",
        metavar="HOST:PORT,...",
        help="every worker's address, the same list on each worker (chief first)",
    )
    scale.add_argument("--task-index", type=TASK_INDEX, help="this worker's place in --workers")
    add_cluster_args(scale)
    scale.add_argument(
        "--worker-timeout",
        type=WORKER_TIMEOUT,
        default=120.0,
        metavar="S",
        help="seconds to wait for every worker to connect, and for any one collective "
        "(default 120)",
    )
    how.add_argument(
        "--seed", type=SEED, default=0,
        help="seeds the initial weights and the synthetic data, so two runs train on the same "
        "numbers (default 0)",
    )  # fmt: skip
    serve = p.add_argument_group("inference (--mode inference): latency under load")
    serve.add_argument("--mode", choices=("train", "lora", "inference"), default="train",
                       help="train: samples/s of training steps, every weight trained "
                       "(default); lora: the same with the base frozen and LoRA adapters "
                       "trained (llama-* workloads); inference: serving latency percentiles at "
                       "each --batch-sizes and --concurrency")  # fmt: skip
    serve.add_argument("--batch-sizes", type=BATCHES, metavar="B,...",
                       help="batch sizes to serve (default 1,8,32)")  # fmt: skip
    serve.add_argument("--concurrency", type=CONCURRENCIES, metavar="C,...",
                       help="concurrent clients at each batch size (default 1)")  # fmt: skip
    serve.add_argument("--slo-ms", type=SLO_MS, metavar="MS",
                       help="latency target: the best point keeps p99 under it")  # fmt: skip
    serve.add_argument("--rate", type=RATE, metavar="SAMPLES_PER_S",
                       help="load to serve: devices it needs at the best point")  # fmt: skip
    serve.add_argument("--serving", choices=("function", "saved_model", "both"),
                       default="function",
                       help="function: call the model in-process (tf.function, default); "
                       "saved_model: through a loaded SavedModel's serving signature; both: "
                       "each, side by side")  # fmt: skip
    stop = p.add_argument_group("when to stop")
    stop.add_argument(
        "--seconds",
        type=SECONDS,
        help=f"time budget for warm-up + measurement (default {DEFAULT_SECONDS:g}; "
        "stops earlier once the 95%% CI is within +-2%%)",
    )
    stop.add_argument(
        "--steps", type=STEPS, help="measure exactly this many steps after warm-up instead"
    )
    stop.add_argument(
        "--warmup-steps",
        type=WARMUP_STEPS,
        help="discard exactly this many steps as warm-up instead of detecting it",
    )
    out = p.add_argument_group("output")
    add_note_arg(out)
    add_publish_args(out)
    out.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    out.add_argument("--json", action="store_true", help="print the result as one JSON object")
    out.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    p.set_defaults(handler=run)


def add_publish_args(group: Any) -> None:
    group.add_argument("--tensorboard", type=Path, metavar="DIR",
                       help="also write the run as TensorBoard scalars under DIR")  # fmt: skip
    group.add_argument("--mlflow", action="store_true",
                       help="also log the run to MLflow (at MLFLOW_TRACKING_URI)")  # fmt: skip


def check_publish(args: argparse.Namespace) -> None:
    """Fail on a missing MLflow or an unwritable --tensorboard before measuring, not after."""
    if args.tensorboard is not None:
        from gpuscout.publish.to_tensorboard import check_logdir

        check_logdir(args.tensorboard)
    if args.mlflow:
        import importlib.util

        if importlib.util.find_spec("mlflow") is None:
            raise UserError(
                "--mlflow needs MLflow, which is not installed.", "pip install mlflow-skinny."
            )


def publish(result: RunResult, args: argparse.Namespace) -> RunResult:
    """Hand a stored run to TensorBoard and MLflow, as asked; say where it went on stderr."""
    if args.tensorboard is not None and result.id is not None:
        from gpuscout.publish.to_tensorboard import write_tensorboard

        folder = write_tensorboard(result, args.tensorboard)
        print(f"tensorboard: run {result.id} in {folder}", file=sys.stderr)
    if args.mlflow:
        from gpuscout.publish.to_mlflow import log_mlflow

        print(f"mlflow: run {result.id} logged as {log_mlflow(result)}", file=sys.stderr)
    return result


def add_note_arg(group: Any) -> None:
    group.add_argument("--note", type=_note, help="free text stored with the run and shown with it")


def _note(text: str) -> str:
    if len(text) > 2000:
        raise argparse.ArgumentTypeError(f"the note has {len(text)} characters, over 2000")
    return text


def noted(result: RunResult, note: str | None) -> RunResult:
    return result.model_copy(update={"note": note}) if note else result


def _refuse_on_torch(args: argparse.Namespace) -> None:
    """The options of several devices that the PyTorch backend cannot run yet, refused by name
    before anything reads the cluster (the rest are refused by measure.benchmark.check)."""
    if args.backend != "torch":
        return
    if args.scaling:  # --cluster is DDP over workers (measure/backends/torch/workers.py)
        raise UserError(
            "--backend torch does not take --scaling: a sweep runs each device count in one "
            "process, and DDP runs one process per device.",
            "drop --scaling, or use --backend tensorflow or jax.",
        )


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    from gpuscout.core.records import BenchConfig

    args.backend = resolved_backend(args.backend, args.model)  # the same answer when asked again
    if args.mode == "inference" and args.scaling:
        raise UserError("--mode inference does not take --scaling.", "drop --scaling.")
    from gpuscout.workloads.llm import mode_dims

    dims = {"seq_len": args.seq_len} if args.seq_len else {}
    dims |= mode_dims(args.workload, args.model, args.mode, args.lora_rank)
    seconds = args.seconds if args.seconds else (None if args.steps else DEFAULT_SECONDS)
    return BenchConfig(
        workload=args.workload,
        model=args.model,
        data=args.data,
        loop=args.loop,
        precision=args.precision,
        xla=args.xla,
        compile=args.compile,
        channels_last=args.channels_last,
        tf32=args.tf32,
        batch_size=args.batch_size,
        device=args.device,
        seconds=seconds,
        steps=args.steps,
        warmup_steps=args.warmup_steps,
        seed=args.seed,
        dims=dims,
        epoch_samples=args.epoch_samples,
        devices=args.devices,
        global_batch_size=args.global_batch_size,
        workers=[w.strip() for w in args.workers.split(",") if w.strip()] if args.workers else None,
        mode="train" if args.mode == "lora" else args.mode,
        batch_sizes=args.batch_sizes,
        concurrency=args.concurrency,
        slo_ms=args.slo_ms,
        rate=args.rate,
        serving=args.serving,
        backend=args.backend,
        task_index=args.task_index,
        worker_timeout_s=args.worker_timeout,
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpuscout.cli.progress import BenchProgress
    from gpuscout.measure.benchmark import check
    from gpuscout.measure.runner import run_isolated
    from gpuscout.store import Store

    args.backend = resolved_backend(args.backend, args.model)  # a plain PyTorch --model: torch
    _refuse_on_torch(args)  # before a cluster manager's variables are read
    resolve_cluster(args, say=not args.quiet and not args.json)  # into --workers/--task-index
    config = config_from_args(args)
    check_publish(args)
    check(config)  # a bad setting is refused before a database is created for it
    store = Store(args.db)  # open (and migrate) before measuring: a bad --db fails fast
    err = Console(stderr=True)
    live = err.is_terminal and not args.quiet and not args.json
    if args.scaling:
        return _sweep(args, config, store, BenchProgress(err, enabled=live))
    with BenchProgress(err, enabled=live) as progress:
        result = run_isolated(config, on_progress=progress.update, on_phase=progress.phase)
    if result.distribution is not None and result.distribution.row_sent:
        # a worker, not the chief: its row is in the chief's stored run (one run per
        # measurement, even when every rank writes to one team store)
        if not args.quiet:
            err.print(
                f"worker {config.task_index}: not stored here; its row is in the chief's "
                "run (worker 0's store)",
                markup=False,
                highlight=False,
            )
    else:
        result = publish(store.save(noted(result, args.note)), args)
    store.close()
    return show(result, args)


def show(result: RunResult, args: argparse.Namespace) -> int:
    """Print a stored run as --json, --quiet or the table ask; exit code 1 if it failed."""
    from gpuscout.report.console import stdout_console
    from gpuscout.report.terminal import print_result

    if args.json:
        print_json(result.to_json_dict())
    elif not args.quiet:
        print_result(result, stdout_console())
    else:
        sps = result.samples_per_second
        print(
            f"{_which(result)}: {result.status}" + (f", {sps.median:.4g} samples/s" if sps else "")
        )
    if result.status != "ok":
        print(
            f"gpuscout: {_which(result)} failed ({result.status}): {printable(result.message)}",
            file=sys.stderr,
        )
        return 1
    return 0


def _which(result: RunResult) -> str:
    """What a line names: "run 12", or for a worker whose row went to the chief (it stores
    nothing, so it has no run id: "run None" said nothing) what it did: "worker 1 (stored in
    the chief's run)"."""
    if result.id is None and result.distribution is not None and result.distribution.row_sent:
        return f"worker {result.config.task_index} (stored in the chief's run)"
    return f"run {result.id}"


def _sweep(args: argparse.Namespace, config: BenchConfig, store: Store, progress: Any) -> int:
    from gpuscout.report.console import stdout_console
    from gpuscout.report.scaling_table import print_sweep
    from gpuscout.scale.distribute import parse_counts
    from gpuscout.scale.sweep import scaling_sweep

    with progress:
        results = scaling_sweep(
            config,
            parse_counts(args.scaling),
            lambda result: publish(store.save(noted(result, args.note)), args),
            on_progress=progress.update,
            on_phase=progress.phase,
        )
    store.close()
    if args.json:
        print_json([r.to_json_dict() for r in results])
    else:
        print_sweep(results, stdout_console())
    failed = [r for r in results if r.status != "ok"]
    for r in failed:
        print(f"gpuscout: run {r.id} failed ({r.status}): {printable(r.message)}", file=sys.stderr)
    return 1 if failed else 0
