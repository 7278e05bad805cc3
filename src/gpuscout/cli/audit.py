"""``gpuscout audit``: check a published speed, spec or relative claim against physics, the
catalog and (relative claims) the one prediction session."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    BATCH,
    CLAIM_GPUS,
    EPOCH_SAMPLES,
    EPOCH_SECONDS,
    SAMPLES_PER_SECOND,
    SEQ_LEN,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core.errors import UserError
from gpuscout.core.run_settings import PRECISIONS

DESCRIPTION = (
    "Check a published claim. A speed claim (--gpu, --workload, --epoch-seconds or "
    "--samples-per-second) is judged against the GPU's peak and the best published results; a "
    "spec claim (--gpu, --spec FIELD=VALUE) against the catalog; a relative claim (--claim "
    '"rtx-4090=1.4x a100-40gb" --workload resnet50) at each precision setting, with the '
    "predicted ratio and its range; --file checks a CSV of speed and spec claims."
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "audit", help="check a published speed, spec or relative claim", description=DESCRIPTION
    )
    p.add_argument("--gpu", help="the GPU a speed or spec claim is about, e.g. a100-40gb")
    p.add_argument(
        "--workload",
        help="resnet50 (Keras' v1), resnet50-v1.5, bert-base, bert-large, gpt2, ... (--claim: "
        "a built-in workload)",
    )
    p.add_argument(
        "--claim",
        metavar="CLAIM",
        help='a relative claim, e.g. "rtx-4090=1.4x a100-40gb" (the first GPU RATIO times as '
        "fast as the second); judged with --workload in fp32 with and without TF32 and in "
        "mixed float16 and bfloat16",
    )
    p.add_argument(
        "-b", "--batch-size", type=BATCH,
        help="per GPU, for --claim (default: the workload's, as predict's)",
    )  # fmt: skip
    p.add_argument(
        "--precision", choices=PRECISIONS,
        help="of a speed claim: fp32 (float32; TF32 tensor cores where the GPU has them), "
        "mixed_float16 or mixed_bfloat16 (FP16 or BF16 tensor cores); default: the one under "
        "which the claim is most plausible (printed)",
    )  # fmt: skip
    speed = p.add_mutually_exclusive_group()
    speed.add_argument("--epoch-seconds", type=EPOCH_SECONDS, help="claimed time per epoch")
    speed.add_argument("--samples-per-second", type=SAMPLES_PER_SECOND, help="claimed throughput")
    p.add_argument("--epoch-samples", type=EPOCH_SAMPLES, help="epoch size (default: workload's)")
    p.add_argument(
        "--gpus", type=CLAIM_GPUS, default=1, help="GPUs the claim used, in all (default 1)"
    )
    p.add_argument("--seq-len", type=SEQ_LEN, help="sequence length (bert-*, gpt2*)")
    p.add_argument(
        "--spec", action="append", default=[], metavar="FIELD=VALUE", help="e.g. fp32_tflops=9.7"
    )
    p.add_argument("--file", type=Path, help="a CSV of claims, one per row")
    p.add_argument(
        "--db", help="for --claim: results database (default: GPUSCOUT_DB or the user data dir)"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_audit)


def _claims(args: argparse.Namespace) -> list[Any]:
    from gpuscout.audit import SpecClaim, SpeedClaim, read_claims
    from gpuscout.audit.spec import parse_spec

    claims: list[Any] = []
    if args.file:
        claims += [c for _, c in read_claims(args.file)]
    speed = args.workload or args.epoch_seconds or args.samples_per_second
    if (speed or args.spec) and not args.gpu:
        raise UserError("a claim needs the GPU it is about.", "add --gpu NAME.")
    if speed:
        if not args.workload:
            raise UserError("a speed claim needs --workload.", "add --workload resnet50 (say).")
        claims.append(
            SpeedClaim(
                gpu=args.gpu,
                workload=args.workload,
                precision=args.precision,
                epoch_seconds=args.epoch_seconds,
                samples_per_second=args.samples_per_second,
                epoch_samples=args.epoch_samples,
                gpus=args.gpus,
                seq_len=args.seq_len,
            )
        )
    for text in args.spec:
        field, value = parse_spec(text)
        claims.append(SpecClaim(args.gpu, field, value))
    if not claims:
        raise UserError(
            "nothing to audit.",
            "give --gpu with --workload and --epoch-seconds, or --gpu with --spec FIELD=VALUE, "
            "or --file claims.csv.",
        )
    return claims


# Options of speed and spec claims, which a relative claim does not take (value when unset).
_NOT_WITH_CLAIM: dict[str, object] = {
    "gpu": None,
    "precision": None,
    "epoch_seconds": None,
    "samples_per_second": None,
    "epoch_samples": None,
    "gpus": 1,
    "spec": [],
    "file": None,
}


def _relative(args: argparse.Namespace) -> int:
    """``--claim``: parse, judge through the one prediction session, render."""
    from gpuscout.audit.relative import RelativeClaim, judge_relative, parse_relative
    from gpuscout.catalog import load_catalog

    for name, unset in _NOT_WITH_CLAIM.items():
        if getattr(args, name) != unset:
            flag = "--" + name.replace("_", "-")
            raise UserError(
                f"{flag} is not part of a relative claim (--claim judges every precision, "
                "one GPU each).",
                f"drop {flag}, or audit it as a separate claim.",
            )
    if not args.workload:
        raise UserError("a relative claim needs --workload.", "add --workload resnet50 (say).")
    gpu, ratio, reference = parse_relative(args.claim)
    claim = RelativeClaim(
        gpu, ratio, reference, args.workload, args.batch_size, args.seq_len, args.claim
    )
    verdict = judge_relative(claim, load_catalog(args.catalog), args.db)
    if args.json:
        print_json({"schema_version": 1, "verdicts": [verdict.to_json_dict()]})
        return 0
    from gpuscout.report.audit_table import print_relative
    from gpuscout.report.console import stdout_console

    print_relative(verdict, stdout_console())
    return 0


def run_audit(args: argparse.Namespace) -> int:
    from gpuscout.audit import audit
    from gpuscout.catalog import load_catalog

    if args.claim is not None:
        return _relative(args)
    for flag, value in (("--batch-size", args.batch_size), ("--db", args.db)):
        if value is not None:
            raise UserError(f"{flag} is for relative claims only.", f"add --claim, or drop {flag}.")
    verdicts = audit(_claims(args), load_catalog(args.catalog))
    if args.json:
        out = {"schema_version": 1, "verdicts": [v.to_json_dict() for v in verdicts]}
        print_json(out)
        return 0
    from gpuscout.report.audit_table import print_verdicts
    from gpuscout.report.console import stdout_console

    print_verdicts(verdicts, stdout_console())
    return 0
