"""Moving runs between databases and people: export to JSON or CSV, import from JSON.

The JSON file is the runs in full (each run's result as ``bench --json`` prints it, plus its
step times and monitor timeline) inside an envelope that names the format and its version, so
a file from a newer gpuscout is refused rather than guessed at. Importing reads a file someone
else made: it is validated whole (every field, every number finite) before anything is
written, and then written in one transaction, so a bad file leaves the database as it was.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuscout.errors import UserError
from gpuscout.records import SCHEMA_VERSION, RunResult

_M = TypeVar("_M", bound=BaseModel)
FORMAT = "gpuscout-runs"
MAX_BYTES = 512 * 1024 * 1024  # refuse larger files rather than exhaust memory
CSV_COLUMNS = (
    "id", "created_at", "status", "workload", "device", "device_name", "precision", "xla",
    "loop", "batch_size", "replicas", "samples_per_second", "samples_per_second_ci_low",
    "samples_per_second_ci_high", "step_time_median_s", "measured_steps", "mfu",
    "tflops", "epoch_seconds", "peak_memory_bytes", "tensorflow", "keras", "message", "note",
)  # fmt: skip


class _StrictRun(RunResult):
    """A run as an imported file must give it: no field this version does not know."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    step_times_s: list[float] = Field(default_factory=list)
    monitor_timeline: dict[str, list[float | None]] = Field(default_factory=dict)


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str
    schema_version: int
    exported_at: str | None = None
    runs: list[dict[str, Any]]


def export_json(runs: Sequence[RunResult]) -> str:
    """The runs in full, in the versioned envelope; SI units as everywhere in gpuscout."""
    body = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [
            {
                **r.to_json_dict(),
                "step_times_s": r.step_times_s,
                "monitor_timeline": r.monitor_timeline,
            }
            for r in runs
        ],
    }
    return json.dumps(body, indent=2, allow_nan=False) + "\n"


def export_csv(runs: Sequence[RunResult]) -> str:
    """One row per run with the headline figures (SI units; the JSON export has everything)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in runs:
        writer.writerow(
            {
                "id": r.id,
                "created_at": r.created_at,
                "status": r.status,
                "workload": r.workload,
                "device": r.device,
                "device_name": r.env.get("device_name"),
                "precision": r.precision,
                "xla": r.xla,
                "loop": r.loop,
                "batch_size": r.batch_size,
                "replicas": r.replicas,
                **r.headline(),
                "tensorflow": r.env.get("tensorflow"),
                "keras": r.env.get("keras"),
                "message": r.message,
                "note": r.note,
            }
        )
    return out.getvalue()


def read_runs(path: Path) -> list[RunResult]:
    """The runs of an exported JSON file, every one validated; UserError naming the first
    bad field (and the run it is in) otherwise."""
    name = str(path)
    try:
        if path.is_dir():
            raise UserError(f"'{name}' is a directory, not a file.", _EXPORTED)
        size = path.stat().st_size
    except OSError as exc:
        raise UserError(f"cannot read '{name}': {exc.strerror}.", _EXPORTED) from None
    if size > MAX_BYTES:
        raise UserError(
            f"'{name}' is {size / 1e6:,.0f} MB, more than the {MAX_BYTES / 1e6:,.0f} MB an "
            "import accepts.",
            "export fewer runs per file (gpuscout runs export --ids ...).",
        )
    try:
        data = json.loads(path.read_bytes(), parse_constant=_no_constant)
    except OSError as exc:  # unreadable after all (permissions, a FIFO gone, a device)
        raise UserError(f"cannot read '{name}': {exc.strerror}.", _EXPORTED) from None
    except (ValueError, RecursionError) as exc:
        raise UserError(
            f"'{name}' is not valid JSON: {str(exc).splitlines()[0][:200]}.",
            "pass a file written by 'gpuscout runs export'.",
        ) from None
    envelope = _validate(_Envelope, data, name, "")
    if envelope.format != FORMAT:
        raise UserError(
            f"'{name}' has format '{envelope.format[:60]}', not '{FORMAT}'.",
            "pass a file written by 'gpuscout runs export'.",
        )
    if envelope.schema_version > SCHEMA_VERSION:
        raise UserError(
            f"'{name}' has schema version {envelope.schema_version}, newer than this gpuscout "
            f"reads ({SCHEMA_VERSION}).",
            "upgrade gpuscout to import it.",
        )
    runs = []
    for i, raw in enumerate(envelope.runs):
        strict = _validate(_StrictRun, raw, name, f"run {i + 1} (index {i}): ")
        fields = strict.model_dump(mode="python")
        _check_finite(fields, name, f"run {i + 1} (index {i})")
        runs.append(RunResult.model_validate({**fields, "id": None}))  # a new id on insert
    return runs


_EXPORTED = "pass a JSON file written by 'gpuscout runs export'."


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a number JSON allows")


def _validate(model: type[_M], data: Any, name: str, where: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(the whole file)"
        raise UserError(
            f"'{name}': {where}field '{field[:120]}': {first['msg']}; nothing was imported.",
            "fix or remove that field, or export the runs again with gpuscout.",
        ) from None


def _check_finite(value: Any, name: str, where: str, path: str = "") -> None:
    """Infinite numbers have no JSON spelling, but huge ones parse as inf: refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(
            f"'{name}': {where}: field '{path}' is not a finite number; nothing was imported.",
            "fix or remove that field.",
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, name, where, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, name, where, f"{path}[{i}]")
