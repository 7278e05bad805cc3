"""A run's content hash: what makes an import idempotent.

A file from elsewhere (a ``cloud collect`` run twice, a collect interrupted and run again, the
same export imported twice) must not store the same run twice. A run has no identity of its
own that survives an export (its id is the store's, and a new store gives a new one), so the
run is known by its content: the SHA-256 of everything that is stored of it but its id, in
canonical JSON. Every stored run carries it (schema v5, filled in for older runs when the
store is migrated), and ``runs import`` skips a run whose hash is already there.

A field at its default is hashed as its absence: a field a later gpuscout adds (``compile``
and ``channels_last`` in issue 44) leaves the hash of every run made before it unchanged, so a
file exported before the field existed still matches the run it came from (schema v6
recomputed every stored hash this way).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel

from gpuscout.core.records import BenchConfig, RunResult, in_utc

HASH_LENGTH = 64  # hex digits of a SHA-256


def content_hash(run: RunResult) -> str:
    """SHA-256 (hex) of the run's stored content without its id: the result as ``bench
    --json`` prints it, its step times and its monitor timeline, keys sorted."""
    stored = run.to_json_dict()
    body = {
        **_without_defaults(stored, RunResult),
        "config": _without_defaults(stored["config"], BenchConfig),
        "id": None,
        "created_at": _utc(run.created_at),
        "step_times_s": run.step_times_s,
        "monitor_timeline": run.monitor_timeline,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _without_defaults(fields: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """``fields`` (a model's JSON) less those at their default, which read as absent."""
    defaults = {
        name: _json(info.get_default(call_default_factory=True))
        for name, info in model.model_fields.items()
        if not info.is_required()
    }
    return {k: v for k, v in fields.items() if k not in defaults or v != defaults[k]}


def _json(value: Any) -> Any:
    """A default as the JSON dump writes it (a tuple as a list; a model as a dict)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple):
        return list(value)
    return value


def _utc(created_at: str) -> str:
    """The time as the store keeps it (UTC, ``core.records.in_utc``): a run imported with
    ``+05:00`` before imports normalised it hashes as the same file imported now."""
    try:
        return in_utc(created_at)
    except ValueError:  # not a time: hashed as written (the import refuses such a run)
        return created_at


__all__ = ["HASH_LENGTH", "content_hash"]
