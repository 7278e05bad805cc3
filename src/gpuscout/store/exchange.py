"""Moving runs between databases and people: export to JSON or CSV, import from JSON.

The JSON file is the runs in full (each run's result as ``bench --json`` prints it, plus its
step times and monitor timeline) inside an envelope that names the format and its version, so
a file from a newer gpuscout is refused rather than guessed at. Importing reads a file someone
else made: each run is validated (every field, every number finite, and what the values mean:
ordered intervals, positive rates and times, real dates; see ``records.impossible_value``; and
figures that agree with each other, ``consistency.py``) as it is read, one run at a time,
and stored in the same single transaction, so a bad run anywhere leaves the database as it
was, and a 10,000-run file needs memory for a batch only.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuscout.core.errors import UserError
from gpuscout.core.records import SCHEMA_VERSION, RunResult, impossible_value, in_utc
from gpuscout.core.text import csv_text
from gpuscout.store.consistency import contradiction

_M = TypeVar("_M", bound=BaseModel)
FORMAT = "gpuscout-runs"
MAX_BYTES = 512 * 1024 * 1024  # refuse larger files rather than exhaust memory
CSV_COLUMNS = (
    "id", "created_at", "status", "workload", "device", "device_name", "precision", "xla",
    "loop", "batch_size", "replicas", "samples_per_second", "samples_per_second_ci_low",
    "samples_per_second_ci_high", "step_time_median_s", "measured_steps", "mfu",
    "tflops", "epoch_seconds", "peak_memory_bytes", "backend", "tensorflow", "jax", "torch",
    "keras", "message", "note",
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
    rows = [
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
            "backend": r.backend,
            "tensorflow": r.env.get("tensorflow"),
            "jax": r.env.get("jax"),
            "torch": r.env.get("torch"),
            "keras": r.env.get("keras"),
            "message": r.message,
            "note": r.note,
        }
        for r in runs
    ]
    return csv_text(CSV_COLUMNS, rows)


def read_runs(path: Path) -> list[RunResult]:
    """The runs of an exported JSON file, every one validated; UserError naming the first
    bad field (and the run it is in) otherwise. (The whole file in memory: for tests and
    small files; ``runs import`` streams with :func:`iter_runs`.)"""
    return list(iter_runs(path))


def iter_runs(path: Path) -> Iterator[RunResult]:
    """The runs of an exported JSON file, one at a time, each validated as it is read.

    Memory holds one run, not the file: a team's 10,000-run export would otherwise be parsed
    whole, then copied twice more by validation. A bad run raises UserError part-way through,
    so the consumer must store what it gets in one transaction (``Store.import_runs``): the
    file is stored whole or not at all. The envelope (format, version) is checked as soon as
    it is read (before the runs, in files gpuscout writes) and again at the end.
    """
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
        f = open(path, encoding="utf-8-sig", errors="strict")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise UserError(f"cannot read '{name}': {exc.strerror}.", _EXPORTED) from None
    with f:
        reader = _JsonStream(f, name)
        head: dict[str, Any] = {}
        i = 0
        for key, item in reader.envelope():
            if key != "run":
                head[key] = item
                continue
            head.setdefault("runs", [])  # the runs are here; they are validated one by one
            _check_envelope(head, name, final=False)
            where = f"run {i + 1} (index {i}"
            if isinstance(item, dict) and isinstance(item.get("id"), int):
                where += f", id {item['id']}"
            where += ")"
            if reader.suspicious:  # a huge number or an escaped NUL in the run's text
                _check_values(item, name, where)
            strict = _validate(_StrictRun, item, name, f"{where}: ")
            fields = strict.model_dump(mode="python")
            del item, strict
            run = RunResult.model_validate({**fields, "id": None})  # a new id on insert
            bad = impossible_value(run) or contradiction(run)
            if not bad:  # stored in UTC, as every run gpuscout measures is
                run = run.model_copy(update={"created_at": in_utc(run.created_at)})
            if bad:
                raise UserError(
                    f"'{name}': {where}: field '{bad[0]}': {bad[1]}; nothing was imported.",
                    "fix or remove that run, or export the runs again with gpuscout.",
                )
            i += 1
            yield run
        _check_envelope(head, name, final=True)


def _check_envelope(head: dict[str, Any], name: str, final: bool) -> None:
    """The envelope's fields, once they are known: everything but the runs."""
    if not final and not ("format" in head and "schema_version" in head):
        return  # a hand-made file with the runs first: checked at the end
    envelope = _validate(_Envelope, head, name, "")
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


class _JsonStream:
    """Reads ``{"key": value, ..., "runs": [run, run, ...]}`` one run at a time.

    Each run (and each other value) is parsed by the standard library's decoder from a
    buffer refilled in growing chunks, so a run of any size is read whole and memory holds
    about one run. Anything that is not that shape is "not valid JSON" (or, for another
    shape of valid JSON, a missing field), naming the character where it went wrong.
    """

    CHUNK = 1 << 20

    def __init__(self, f: Any, name: str) -> None:
        self.f, self.name = f, name
        self.buf, self.pos, self.base, self.eof = "", 0, 0, False
        self.decoder = json.JSONDecoder(parse_constant=_no_constant)
        self.suspicious = False  # the last value's text may hold inf or NUL: walk it

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            more = self.f.read(max(self.CHUNK, len(self.buf) - self.pos))
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read '{self.name}': {exc}.", _EXPORTED) from None
        if not more:
            self.eof = True
            return False
        self.base += self.pos
        self.buf, self.pos = self.buf[self.pos :] + more, 0
        return True

    def _bad(self, what: str) -> UserError:
        return UserError(
            f"'{self.name}' is not valid JSON: {what[:200]} (character {self.base + self.pos}).",
            "pass a file written by 'gpuscout runs export'.",
        )

    def _peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf) or not self._fill():
                return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def _expect(self, char: str, what: str) -> None:
        found = self._peek()
        if found != char:
            raise self._bad(f"expected {what}, found {found[:1]!r}" if found else f"{what} missing")
        self.pos += 1

    def _value(self) -> Any:
        self._peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self._fill():
                    continue  # the value goes on in the next chunk
                raise self._bad(exc.msg) from None
            except (ValueError, RecursionError) as exc:
                raise self._bad(
                    str(exc).splitlines()[0] if str(exc) else "nested too deep"
                ) from None
            if end == len(self.buf) and self._fill():
                continue  # a number cut at the chunk's end: read it whole
            self.suspicious = _SUSPICIOUS.search(self.buf, self.pos, end) is not None
            self.pos = end
            return value

    def envelope(self) -> Iterator[tuple[str, Any]]:
        """(key, value) for the envelope's fields, and ("run", run) for each run in order."""
        if self._peek() != "{":
            raise self._bad("an export is an object, '{' ... '}'")
        self.pos += 1
        if self._peek() == "}":
            self.pos += 1
        else:
            while True:
                key = self._value()
                if not isinstance(key, str):
                    raise self._bad("expected a field name")
                self._expect(":", "':'")
                if key == "runs":
                    yield from self._runs()
                else:
                    yield key, self._value()
                if self._peek() == ",":
                    self.pos += 1
                    continue
                self._expect("}", "',' or '}'")
                break
        if self._peek():
            raise self._bad("extra data after the end")

    def _runs(self) -> Iterator[tuple[str, Any]]:
        if self._peek() != "[":
            yield "runs", self._value()  # not a list: the envelope's validation names it
            return
        self.pos += 1
        if self._peek() == "]":
            self.pos += 1
            yield "runs", []  # there, and empty
            return
        while True:
            yield "run", self._value()
            if self._peek() == ",":
                self.pos += 1
                continue
            self._expect("]", "',' or ']'")
            return


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


# What can make a parsed value impossible to store, as JSON text: a number of 3+ exponent
# digits or 300+ digits (it may parse as inf) and an escaped NUL. Searched in each run's text
# (C speed); only a run that matches is walked, value by value, to name the field.
_SUSPICIOUS = re.compile(r"[eE][+-]?\d{3}|\d{300}|\\u0000")


def _check_values(value: Any, name: str, where: str, path: str = "") -> None:
    """Infinite numbers have no JSON spelling, but huge ones parse as inf: refuse them. And
    NUL in a string (a field or a key): no text gpuscout shows has one, and C-string tools
    (SQLite's shell, terminals) cut the text there. Other control characters are stored as
    given; every renderer neutralises them."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UserError(
                f"'{name}': {where}: field '{path}' is not a finite number; nothing was imported.",
                "fix or remove that field.",
            )
    elif isinstance(value, str):
        if "\x00" in value:
            raise UserError(
                f"'{name}': {where}: field '{path}' holds a NUL character; nothing was imported.",
                "remove it from that field.",
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            at = f"{path}.{key}" if path else str(key)
            _check_values(key, name, where, at)
            _check_values(item, name, where, at)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_values(item, name, where, f"{path}[{i}]")
