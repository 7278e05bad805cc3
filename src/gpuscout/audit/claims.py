"""A table of claims (``--file claims.csv``): one speed or spec claim per row.

Columns: ``gpu`` (required), ``label``; for a speed claim ``workload``, ``precision``, and
``epoch_seconds`` or ``samples_per_second``, optionally ``epoch_samples``, ``gpus``, ``seq_len``;
for a spec claim ``spec`` as FIELD=VALUE. ``source``, ``batch_size`` and ``note`` are kept as
information only.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from gpuscout.audit.spec import SpecClaim, parse_spec
from gpuscout.audit.speed import SpeedClaim
from gpuscout.core.errors import UserError, did_you_mean
from gpuscout.core.run_settings import PRECISIONS

Claim = SpeedClaim | SpecClaim
COLUMNS = (
    "label",
    "gpu",
    "workload",
    "precision",
    "epoch_seconds",
    "samples_per_second",
    "epoch_samples",
    "gpus",
    "seq_len",
    "spec",
    "source",
    "batch_size",
    "note",
)


def read_claims(path: Path) -> list[tuple[int, Claim]]:
    """Every claim in the file with its line number; a bad cell names file, line and column."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or [])
            records = [(reader.line_num, dict(r)) for r in reader]
    except FileNotFoundError:
        raise UserError(f"claims file '{path}' does not exist.", "check the path.") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"cannot read claims file '{path}': {exc}.", "give a UTF-8 CSV.") from None
    for column in header:
        if column not in COLUMNS:
            raise UserError(
                f"{path}: unknown column '{column}'.{did_you_mean(column, COLUMNS)}",
                f"use columns from: {', '.join(COLUMNS)}.",
            )
    if "gpu" not in header:
        raise UserError(f"{path}: missing column 'gpu'.", "add a gpu column.")
    claims = []
    for line, cells in records:
        if None in cells:
            raise UserError(f"{path}: line {line} has more cells than the header.", None)
        cells = {k: (v or "").strip() for k, v in cells.items()}
        if any(cells.values()):
            claims.append((line, _claim(path, line, cells)))
    if not claims:
        raise UserError(f"claims file '{path}' has no claims.", "add one row per claim.")
    return claims


def _claim(path: Path, line: int, cells: dict[str, str]) -> Claim:
    where = f"{path}: line {line}"
    if not cells.get("gpu"):
        raise UserError(f"{where}, column 'gpu': empty.", "name the GPU of every claim.")
    label = cells.get("label") or None
    if cells.get("spec"):
        try:
            field, value = parse_spec(cells["spec"])
        except UserError as exc:
            raise UserError(f"{where}, column 'spec': {exc.problem}", exc.fix) from None
        return SpecClaim(cells["gpu"], field, value, label)
    if not cells.get("workload"):
        raise UserError(
            f"{where}: neither 'spec' nor 'workload' is given.",
            "a row is a spec claim (spec=FIELD=VALUE) or a speed claim (workload, ...).",
        )
    precision = cells.get("precision") or None
    if precision is not None and precision not in PRECISIONS:
        raise UserError(
            f"{where}, column 'precision': unknown precision '{precision}'."
            f"{did_you_mean(precision, PRECISIONS)}",
            f"use one of: {', '.join(PRECISIONS)}, or leave it empty.",
        )
    return SpeedClaim(
        gpu=cells["gpu"],
        workload=cells["workload"],
        precision=precision,
        epoch_seconds=_num(where, cells, "epoch_seconds"),
        samples_per_second=_num(where, cells, "samples_per_second"),
        epoch_samples=_int(where, cells, "epoch_samples"),
        gpus=_int(where, cells, "gpus") or 1,
        seq_len=_int(where, cells, "seq_len"),
        label=label,
    )


# The same ranges as the CLI's options of the same names (declared once, in limits.py), so
# a claims file cannot pass what --epoch-seconds refuses: 'inf' said "plausible, 0 % MFU" and
# 1e-300 s per epoch printed Infinity in the JSON (issue 17).
_RANGES = {
    "epoch_seconds": "EPOCH_SECONDS",
    "samples_per_second": "SAMPLES_PER_SECOND",
    "epoch_samples": "EPOCH_SAMPLES",
    "gpus": "CLAIM_GPUS",
    "seq_len": "SEQ_LEN",
}


def _num(where: str, cells: dict[str, str], column: str) -> float | None:
    import argparse

    from gpuscout.core import limits
    from gpuscout.core.ranges import IntRange

    text = cells.get(column, "")
    if not text:
        return None
    check = getattr(limits, _RANGES[column])
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:  # also NaN
        raise UserError(
            f"{where}, column '{column}': not a positive number (got '{text}').",
            "correct the cell.",
        )
    try:
        if isinstance(check, IntRange):
            if not (math.isfinite(value) and check.low <= value <= check.high):
                raise argparse.ArgumentTypeError(
                    f"must be a whole number {check.bounds()}, got {text}"
                )
            return float(check(str(int(value))))  # '8.0' is 8 (_int refuses 8.5)
        return float(check(text))
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"{where}, column '{column}': {exc}.", "correct the cell.") from None


def _int(where: str, cells: dict[str, str], column: str) -> int | None:
    text = cells.get(column, "")
    try:
        whole = float(text) == int(float(text)) if text else True
    except (ValueError, OverflowError):
        whole = True  # not a number, or infinite: _num names the problem
    if not whole:
        raise UserError(
            f"{where}, column '{column}': not a whole number (got '{text}').",
            "correct the cell.",
        )
    value = _num(where, cells, column)
    return None if value is None else int(value)
