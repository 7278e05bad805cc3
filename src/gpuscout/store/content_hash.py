"""A run's content hash: what makes an import idempotent.

A file from elsewhere (a ``cloud collect`` run twice, a collect interrupted and run again, the
same export imported twice) must not store the same run twice. A run has no identity of its
own that survives an export (its id is the store's, and a new store gives a new one), so the
run is known by its content: the SHA-256 of everything that is stored of it but its id, in
canonical JSON. Every stored run carries it (schema v5, filled in for older runs when the
store is migrated), and ``runs import`` skips a run whose hash is already there.
"""

from __future__ import annotations

import hashlib
import json

from gpuscout.core.records import RunResult, in_utc

HASH_LENGTH = 64  # hex digits of a SHA-256


def content_hash(run: RunResult) -> str:
    """SHA-256 (hex) of the run's stored content without its id: the result as ``bench
    --json`` prints it, its step times and its monitor timeline, keys sorted."""
    body = {
        **run.to_json_dict(),
        "id": None,
        "created_at": _utc(run.created_at),
        "step_times_s": run.step_times_s,
        "monitor_timeline": run.monitor_timeline,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _utc(created_at: str) -> str:
    """The time as the store keeps it (UTC, ``core.records.in_utc``): a run imported with
    ``+05:00`` before imports normalised it hashes as the same file imported now."""
    try:
        return in_utc(created_at)
    except ValueError:  # not a time: hashed as written (the import refuses such a run)
        return created_at


__all__ = ["HASH_LENGTH", "content_hash"]
