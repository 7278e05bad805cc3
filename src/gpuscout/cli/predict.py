"""``gpuscout predict``: speed on catalog GPUs, one and many, from the step's cost profile."""

from __future__ import annotations

import argparse
from typing import Any

from gpuscout.cli.job_args import add_stack_option
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    EPOCH_SAMPLES,
    GPU_COUNTS,
    LORA_RANK,
    NETWORK_GBIT,
    RUN_ID,
    SEQ_LEN,
    add_backend_option,
    gpu_names,
    model_spec,
    precision_help,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core.articles import REFERENCE_GPU
from gpuscout.core.errors import UserError
from gpuscout.core.run_settings import PRECISIONS, TF32_HELP, TRAINING_PRECISION
from gpuscout.workloads.llm import LORA_RANK as LLM_LORA_RANK

DEFAULT_GPUS = "rtx-3090,rtx-4090,a100-40gb-sxm,a100-80gb-sxm,h100-sxm"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "predict",
        help="training speed on GPUs you don't have, 1..N of them",
        description="Predict training speed (or inference latency) on catalog GPUs you don't "
        "have, one GPU or many, over machines, from the training step's compiled program "
        "(its FLOPs, memory traffic and kernels) and each GPU's catalog figures, fitted to "
        "published measurements and your stored GPU runs. Every figure comes with a range and "
        "the assumptions behind it; 'gpuscout calibrate' shows the fit.",
        epilog="e.g. gpuscout predict --workload resnet50 --gpus 4090,h100-sxm --count 1,8; "
        "gpuscout predict --model my_model.py:build -b 64 --gpus all",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--workload",
        help="a built-in workload: mlp, cnn-small, resnet50 (Keras' v1), resnet50-v1.5 (as "
        "NVIDIA's examples and most PyTorch code train it), bert-base, bert-large, gpt2, "
        "gpt2-medium, gpt2-large, llama-3.2-1b, llama-3.2-3b, llama-2-7b, llama-3.1-8b, "
        "llama-tiny (or give --model)",
    )
    what.add_argument("--model", type=model_spec, help="your model: FILE.py:FUNCTION or FILE.keras")
    p.add_argument(
        "--precision", choices=PRECISIONS,
        help=precision_help(f"{TRAINING_PRECISION} for training, every command's default; fp32 "
                            "for --mode inference"),
    )  # fmt: skip
    add_backend_option(p, "traces the step")
    p.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True, help=TF32_HELP)
    p.add_argument("--mode", choices=("train", "lora", "inference"), default="train",
                   help="train: samples/s of training steps, every weight trained (default); "
                   "lora: the base frozen and LoRA adapters trained (llama-* workloads); "
                   "inference: latency of a forward pass per batch (traced once, with TF)"
                   )  # fmt: skip
    p.add_argument("--lora-rank", type=LORA_RANK, metavar="R",
                   help=f"--mode lora: the adapters' rank (default {LLM_LORA_RANK})")  # fmt: skip
    p.add_argument("--checkpointing", action="store_true",
                   help="gradient checkpointing (llama-* workloads): each block's input kept, "
                   "the block recomputed in the backward pass, as torchtune's and Hugging "
                   "Face's activation checkpointing do; traced on JAX")  # fmt: skip
    p.add_argument("--op-by-op", action="store_true",
                   help="the step run op by op, as eager PyTorch runs a model written as "
                   "tensor ops (Hugging Face transformers and PEFT without torch.compile): "
                   "every elementwise op its own kernel, reading its inputs and writing its "
                   "result (default: fused as XLA or torch.compile fuses it; llama-* "
                   "workloads)")  # fmt: skip
    p.add_argument("--compile", action="store_true",
                   help="a plain PyTorch --model run under torch.compile: its captured step's "
                   "kernels fused (as XLA fuses them, gpuscout's stand-in for Inductor's), not "
                   "one kernel an op as eager PyTorch runs it (the default)")  # fmt: skip
    p.add_argument("-b", "--batch-size", type=BATCH,
                   help="samples per GPU per step (default: the workload's)")  # fmt: skip
    p.add_argument("--seq-len", type=SEQ_LEN,
                   help="sequence length (bert-*; gpt2*: at most 1024; llama-*: default 2048)"
                   )  # fmt: skip
    p.add_argument(
        "--gpus", type=gpu_names, default=DEFAULT_GPUS,
        help=f"GPUs to predict, a comma list of catalog names or 'all' (default: {DEFAULT_GPUS})",
    )  # fmt: skip
    p.add_argument(
        "--count",
        type=GPU_COUNTS,
        default=[(1, 1)],
        help="GPU counts to predict, a comma list: GPUs in one machine (1,4,8) or machines x "
        "GPUs each (2x8: data parallel over the --network) (default 1)",
    )
    p.add_argument("--sharded", action="store_true",
                   help="with --count above 1: the weights sharded over the GPUs (PyTorch FSDP "
                   "full shard, DeepSpeed ZeRO-3), all-gathered twice a step and the gradients "
                   "reduce-scattered (default: data parallel, one all-reduce)")  # fmt: skip
    p.add_argument(
        "--network", type=NETWORK_GBIT, default=100.0, metavar="GBIT",
        help="network between nodes, Gb/s per node (default 100)",
    )  # fmt: skip
    p.add_argument("--epoch-samples", type=EPOCH_SAMPLES,
                   help="samples in one epoch, for the time per epoch, e.g. 1281167 "
                   "(default: the workload's dataset)")  # fmt: skip
    p.add_argument("--reference", default=REFERENCE_GPU,
                   help="speeds are also shown relative to this GPU (default "
                   f"{REFERENCE_GPU})")  # fmt: skip
    p.add_argument("--from-run", type=RUN_ID, metavar="ID",
                   help="anchor on this stored GPU run alone (its id in 'gpuscout runs list'; "
                   "it must have measured the same workload or model and precision): its GPU "
                   "shows the measurement, every other GPU that times the model's ratio. "
                   "Without it, every stored one-GPU run of the step anchors")  # fmt: skip
    add_stack_option(p)
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument(
        "--breakdown", action="store_true",
        help="also show where one GPU's step goes: compute-, memory- and launch-bound kernels",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_predict)


def run_predict(args: argparse.Namespace) -> int:
    from gpuscout.cli.parser import resolved_backend
    from gpuscout.measure.backends import refuse_torch_workload

    # a plain PyTorch --model is captured by PyTorch (--backend naming another framework is
    # refused here, before anything is read, built or stored)
    backend = resolved_backend(args.backend, args.model)
    refuse_torch_workload("predict", backend, args.workload)
    if args.compile and backend != "torch":
        raise UserError(
            "--compile predicts a plain PyTorch --model under torch.compile; "
            + (f"--model {args.model}" if args.model else f"--workload {args.workload}")
            + " is a Keras model, which its backend compiles with XLA (bench --xla).",
            "drop --compile, or give --model FILE.py:FUNCTION returning a torch.nn.Module.",
        )
    from gpuscout.predict.request import PredictRequest, predict_for
    from gpuscout.workloads.llm import checkpointing_dims, mode_dims

    lora = mode_dims(args.workload, args.model, args.mode, args.lora_rank).get("lora_rank")
    checkpointing_dims(args.workload, args.checkpointing)  # refused early, before any trace
    if args.op_by_op and args.mode == "inference":
        raise UserError(
            "--op-by-op counts a training step run eagerly; --mode inference is not counted "
            "that way.",
            "drop --op-by-op, or use --mode train or lora.",
        )
    if args.checkpointing and args.mode == "inference":
        raise UserError(
            "--checkpointing recomputes activations for a backward pass, and --mode inference "
            "has none.",
            "drop --checkpointing, or use --mode train or lora.",
        )
    answer = predict_for(
        PredictRequest(
            gpus=args.gpus,
            workload=args.workload,
            model=args.model,
            precision=args.precision,
            backend=backend,
            tf32=args.tf32,
            mode="train" if args.mode == "lora" else args.mode,
            batch_size=args.batch_size,
            seq_len=args.seq_len,
            lora_rank=lora,
            checkpointing=args.checkpointing,
            counts=args.count,
            sharded=args.sharded,
            op_by_op=args.op_by_op,
            compiled=args.compile,
            network_gbit=args.network,
            epoch_samples=args.epoch_samples,
            reference=args.reference,
            from_run=args.from_run,
            stack=args.stack,
            db=args.db,
            catalog=args.catalog,
        )
    )
    if args.json:
        print_json(answer.to_json())
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.predict_table import breakdown_table, inference_table, prediction_table

    console = stdout_console()
    if answer.mode == "inference":
        console.print(inference_table(answer.rows, answer.profile, answer.reference))
        lines = answer.notes
    else:
        console.print(prediction_table(answer.rows, answer.profile, answer.reference, answer.unit,
                                       answer.tokens_per_sample))  # fmt: skip
        if args.breakdown:
            console.print(breakdown_table(answer.rows, answer.profile))
        lines = [*answer.notes, *answer.row_assumptions]
    for line in lines:
        console.print(f"assumption: {line}", highlight=False)
    if not answer.fits_any and answer.mode == "train":
        raise UserError("the step fits on none of these GPUs.", answer.no_fit_fix())
    return 0
