"""``gpuscout audit``: check a published speed or spec claim against physics and the catalog."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    CLAIM_GPUS,
    EPOCH_SAMPLES,
    EPOCH_SECONDS,
    SAMPLES_PER_SECOND,
    SEQ_LEN,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.errors import UserError
from gpuscout.run_settings import PRECISIONS


def register(sub: Any) -> None:
    p = sub.add_parser("audit", help="check a published speed or spec claim")
    p.add_argument("--gpu", help="the GPU the claim is about, e.g. a100-40gb")
    p.add_argument("--workload", help="resnet50, resnet50-v1.5, bert-base, bert-large, gpt2, ...")
    p.add_argument(
        "--precision", choices=PRECISIONS,
        help="default: the precision under which the claim is most plausible (printed)",
    )  # fmt: skip
    speed = p.add_mutually_exclusive_group()
    speed.add_argument("--epoch-seconds", type=EPOCH_SECONDS, help="claimed time per epoch")
    speed.add_argument("--samples-per-second", type=SAMPLES_PER_SECOND, help="claimed throughput")
    p.add_argument("--epoch-samples", type=EPOCH_SAMPLES, help="epoch size (default: workload's)")
    p.add_argument("--gpus", type=CLAIM_GPUS, default=1, help="GPUs the claim used (total)")
    p.add_argument("--seq-len", type=SEQ_LEN, help="sequence length (BERT)")
    p.add_argument(
        "--spec", action="append", default=[], metavar="FIELD=VALUE", help="e.g. fp32_tflops=9.7"
    )
    p.add_argument("--file", type=Path, help="a CSV of claims, one per row")
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


def run_audit(args: argparse.Namespace) -> int:
    from gpuscout.audit import audit
    from gpuscout.catalog import load_catalog

    verdicts = audit(_claims(args), load_catalog(args.catalog))
    if args.json:
        out = {"schema_version": 1, "verdicts": [v.to_json_dict() for v in verdicts]}
        print_json(out)
        return 0
    from gpuscout.report.audit_table import print_verdicts
    from gpuscout.report.console import stdout_console

    print_verdicts(verdicts, stdout_console())
    return 0
