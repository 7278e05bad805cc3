"""Reading catalog CSV files: the kind of file from its header, every row validated.

A bad cell stops the load with one line naming the file, the line and the column, so a typo in
a user's catalog can never turn into a silently wrong prediction or price.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from gpuscout.catalog.models import Busbw, Gpu, Price, Published
from gpuscout.catalog.plausible import PRICE_RANGES, RANGES
from gpuscout.core.errors import UserError, did_you_mean
from gpuscout.core.text import from_spreadsheet_safe

FileKind = Literal["gpus", "prices", "published", "busbw", "skypilot"]
MODELS: dict[str, type[BaseModel]] = {
    "gpus": Gpu,
    "prices": Price,
    "published": Published,
    "busbw": Busbw,
}
SKYPILOT_COLUMNS = frozenset({"InstanceType", "AcceleratorName", "AcceleratorCount", "Price"})
_FIELD_TABLE = "see the field table in the catalog README (gpuscout/catalog/data/v1/README.md)"


@dataclass(frozen=True)
class Table:
    path: Path
    kind: FileKind
    rows: list[tuple[int, dict[str, str]]]  # (line number, cells)


def read_table(path: Path) -> Table:
    """Read a CSV file and tell what it holds from its columns."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or [])
            rows = []
            for record in reader:
                if None in record:
                    raise UserError(
                        f"{path}: line {reader.line_num} has more cells than the header.",
                        "quote cells that contain commas.",
                    )
                if any((v or "").strip() for v in record.values()):
                    # a cell gpuscout's CSV writer kept from a spreadsheet's formulas reads
                    # back as written (specs --csv, read as a catalog file)
                    cells = {k: from_spreadsheet_safe(v or "") for k, v in record.items()}
                    rows.append((reader.line_num, cells))
    except FileNotFoundError:
        raise UserError(f"catalog file '{path}' does not exist.", "check the path.") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"cannot read catalog file '{path}': {exc}.", "give a UTF-8 CSV.") from None
    return Table(path, _kind(path, header), rows)


def _kind(path: Path, header: list[str]) -> FileKind:
    columns = set(header)
    if columns >= SKYPILOT_COLUMNS:
        return "skypilot"
    if {"id", "fp32_tflops"} <= columns:
        return "gpus"
    if {"gpu_id", "provider", "kind"} <= columns:
        return "prices"
    if {"gpu_id", "throughput"} <= columns:
        return "published"
    if {"gpu_id", "busbw_gb_per_s"} <= columns:
        return "busbw"
    raise UserError(
        f"{path}: cannot tell what this CSV holds from its columns ({', '.join(header[:6])}...).",
        "a GPU file needs 'id' and 'fp32_tflops', a price file 'gpu_id', 'provider' and 'kind', "
        "an NCCL bandwidth file 'gpu_id' and 'busbw_gb_per_s', "
        f"a SkyPilot catalog 'InstanceType', 'AcceleratorName', 'AcceleratorCount', 'Price'; "
        f"{_FIELD_TABLE}.",
    )


def check_columns(table: Table) -> None:
    """Unknown or missing columns are named before any row is read."""
    model = MODELS[table.kind]
    fields = model.model_fields
    header = set(table.rows[0][1]) if table.rows else set()
    for column in sorted(header - set(fields)):
        raise UserError(
            f"{table.path}: unknown column '{column}'.{did_you_mean(column, fields)}",
            _FIELD_TABLE + ".",
        )
    required = {name for name, info in fields.items() if info.is_required()}
    missing = sorted(required - header) if table.rows else []
    if missing:
        raise UserError(
            f"{table.path}: missing column '{missing[0]}'.",
            f"add it ({_FIELD_TABLE}).",
        )


def validated(table: Table) -> Iterator[tuple[int, BaseModel]]:
    """Each row as its model; the first bad cell is a user error naming file, line, column."""
    check_columns(table)
    model = MODELS[table.kind]
    for line, cells in table.rows:
        try:
            yield line, model.model_validate(cells)
        except ValidationError as exc:
            raise _row_error(table.path, line, cells, exc) from None


def _row_error(path: Path, line: int, cells: dict[str, str], exc: ValidationError) -> UserError:
    err = exc.errors()[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["loc"]:
        column = str(err["loc"][0])
        got = cells.get(column, "")
        rng = RANGES.get(column) or PRICE_RANGES.get(column)
        if err["type"] == "finite_number" and rng is not None:
            return UserError(
                f"{path}: line {line}, column '{column}': '{got}' is not a finite number.",
                f"give {column} in {rng.unit} ({rng.text()}).",
            )
        return UserError(
            f"{path}: line {line}, column '{column}': {msg} (got '{got}').",
            f"correct the cell; {_FIELD_TABLE}.",
        )
    return UserError(f"{path}: line {line}: {msg}.", f"correct the row; {_FIELD_TABLE}.")


# A user's clock and the file's author may be a time zone apart; a day more is a wrong date.
CLOCK_SKEW = dt.timedelta(days=1)
DATE_COLUMNS = ("retrieved_on", "observed_on")


def check_dates(row: BaseModel, path: Path, line: int, today: dt.date | None = None) -> None:
    """A date after today (and a day of clock skew) in a user's row is refused: a price "seen"
    in the future reads "-26,324 days ago" and ranks as the newest and cheapest (issue 31)."""
    today = today or dt.date.today()
    for column in DATE_COLUMNS:
        value = getattr(row, column, None)
        if value is None:
            continue
        date = value if isinstance(value, dt.date) else _month_or_day(str(value))
        if date > today + CLOCK_SKEW:
            raise UserError(
                f"{path}: line {line}, column '{column}': {value} is in the future (today is "
                f"{today.isoformat()}).",
                "give the date the figure was seen or retrieved; if it is right, check this "
                "computer's clock.",
            )


def _month_or_day(text: str) -> dt.date:
    """YYYY-MM-DD, or YYYY-MM as its 1st (as ``Price.age_days`` reads it)."""
    return dt.date.fromisoformat(text if len(text) == 10 else f"{text}-01")


def row_key(row: BaseModel) -> tuple[str, str] | None:
    """What a row is about, in words and as a key, where two rows of one file must differ
    (the key is what makes two rows the same fact, so a second one could only repeat or
    contradict the first, and which one counts would be an accident of order):

    * a GPU: its id;
    * a price: its GPU, provider, kind, instance and region;
    * a published measurement: its source, framework, workload, GPU, GPU count, precision,
      batch per GPU and sequence length: one source's figure for one setting. Two sources
      for one setting are two measurements and both count (calibration fits to each);
    * a measured NCCL bus bandwidth: its GPU and link, since the scaling model uses one
      figure per GPU and link (``Catalog.measured_busbw``), whatever the GPU count.

    None: no such rule.
    """
    if isinstance(row, Gpu):
        return f"GPU id '{row.id}'", row.id
    if isinstance(row, Price):
        parts = (row.gpu_id, row.provider, row.kind, row.instance_type or "", row.region or "")
        words = f"the {row.kind} price of {row.gpu_id} at {row.provider}"
        return words + (f" ({row.instance_type})" if row.instance_type else ""), "\0".join(parts)
    if isinstance(row, Published):
        batch = f", batch {row.batch_size_per_gpu}" if row.batch_size_per_gpu else ""
        seq = f", sequence {row.seq_len}" if row.seq_len else ""
        words = (
            f"{row.source_id}'s {row.framework} {row.workload} throughput on "
            f"{row.gpu_count} x {row.gpu_id} in {row.precision}{batch}{seq}"
        )
        fields = (row.source_id, row.framework, row.workload, row.gpu_id, row.gpu_count,
                  row.precision, row.batch_size_per_gpu, row.seq_len)  # fmt: skip
        return words, "\0".join(str(f or "") for f in fields)
    if isinstance(row, Busbw):
        return f"the {row.link} bus bandwidth of {row.gpu_id}", f"{row.gpu_id}\0{row.link}"
    return None


_TELL_APART = {
    Price: ", or tell them apart by instance_type or region.",
    Published: ", or tell them apart by source_id (two sources' figures are both kept).",
    Busbw: " (gpuscout uses one measured bus bandwidth per GPU and link).",
}


def check_duplicate(row: BaseModel, path: Path, line: int, seen: dict[str, int]) -> None:
    """Two rows of one user file about the same thing are refused naming both lines: which
    of them wins would be an accident of order (issue 31)."""
    found = row_key(row)
    if found is None:
        return
    words, key = found
    if key in seen:
        raise UserError(
            f"{path}: lines {seen[key]} and {line} both give {words}.",
            "keep one of the two rows" + _TELL_APART.get(type(row), "."),
        )
    seen[key] = line
