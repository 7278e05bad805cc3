"""Every worker's own row, carried to the chief by the framework's collectives.

A cluster manager starts one ``gpuscout bench`` per node, each with its own disk and store,
so no process can read another's stored run the way ``gpuscout launch`` reads its workers'
scratch databases. The rows travel in-band instead, through the collectives the run already
has (no new network channel, no new port to open between nodes): after the timed steps and
the network figure, every worker all-gathers one fixed-size byte buffer holding its
:class:`~gpuscout.core.records.WorkerRun` as JSON. A collective needs the same shape on every
rank, hence the fixed size; the length prefix says how much of it is the row.

The buffer is capped (:data:`CAP_BYTES`) because every rank receives every rank's buffer:
n x the cap crosses the network and sits in memory. A row that does not fit still goes, with
its environment cut down and a note saying so, so one worker's odd environment never costs
the run its rows. This module is framework-free (NumPy only), so packing is unit-tested
without TensorFlow or JAX; each backend only moves the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import ValidationError

from gpuscout.core.records import WorkerRun
from gpuscout.measure.loss_check import DIVERGED
from gpuscout.measure.protocol import Outcome

CAP_BYTES = 64 * 2**10  # 64 KiB a worker (4-byte aligned): an environment is ~1 KiB
LENGTH_BYTES = 4  # the big-endian length prefix
ADDRESS_CHARS = 256  # an address longer than this is cut in the last-resort row
TRUNCATED = "truncated"  # the env key that says what was left out, and why


def own_row(
    task_index: int, address: str, outcome: Outcome, global_batch: int, env: dict[str, Any]
) -> WorkerRun:
    """This worker's row, as it saw the run: the global batch over its own median step (the
    rate ``compose`` gives the chief's run), its environment, and whether its training broke."""
    median = outcome.summary.median
    return WorkerRun(
        task_index=task_index,
        address=address,
        status=DIVERGED if outcome.broken else "ok",
        message=outcome.broken,
        samples_per_second=global_batch / median if median > 0 else None,
        env=env,
    )


def pack(row: WorkerRun, cap: int = CAP_BYTES) -> np.ndarray:
    """``row`` as ``cap`` bytes (uint8): a big-endian length, the JSON, zeros. A row over the
    cap keeps the environment's smallest entries that fit (the host name, the versions), and
    says in ``env["truncated"]`` and in its message what was left out."""
    data = _encode(row)
    if len(data) > cap - LENGTH_BYTES:
        data = _encode(_fitted(row, len(data), cap))
    buffer = np.zeros(cap, np.uint8)
    if len(data) > cap - LENGTH_BYTES:  # a cap too small for any row: sent empty, skipped
        return buffer
    buffer[:LENGTH_BYTES] = np.frombuffer(len(data).to_bytes(LENGTH_BYTES, "big"), np.uint8)
    buffer[LENGTH_BYTES : LENGTH_BYTES + len(data)] = np.frombuffer(data, np.uint8)
    return buffer


def unpack(buffers: Iterable[np.ndarray]) -> list[WorkerRun]:
    """The rows in gathered buffers (one per rank, or per replica: a worker with several
    devices sends the same row from each), one per task index, sorted by it. A buffer whose
    length prefix is zero, runs past its end, or whose JSON is not a valid row is skipped:
    a bad row loses that row only, never the run."""
    rows: dict[int, WorkerRun] = {}
    for raw in buffers:
        buffer = np.asarray(raw, np.uint8).reshape(-1)
        if buffer.size < LENGTH_BYTES:
            continue
        length = int.from_bytes(buffer[:LENGTH_BYTES].tobytes(), "big")
        if not 0 < length <= buffer.size - LENGTH_BYTES:
            continue
        try:
            row = WorkerRun.model_validate_json(
                buffer[LENGTH_BYTES : LENGTH_BYTES + length].tobytes()
            )
        except ValidationError:
            continue
        rows.setdefault(row.task_index, row)
    return [rows[i] for i in sorted(rows)]


def as_words(packed: np.ndarray) -> np.ndarray:
    """The packed bytes as little-endian int32 words, for collectives that move no uint8
    (TensorFlow's all-gather takes float and int32/int64 only); :func:`from_words` undoes it."""
    return np.ascontiguousarray(packed, np.uint8).view("<i4")


def from_words(gathered: np.ndarray) -> np.ndarray:
    """Gathered int32 words (one row of them per rank) back as one row of bytes per rank."""
    words = np.ascontiguousarray(gathered, "<i4")
    return words.view(np.uint8).reshape(words.shape[0], -1)


def _encode(row: WorkerRun) -> bytes:
    return row.model_dump_json().encode()


def _fitted(row: WorkerRun, size: int, cap: int) -> WorkerRun:
    """``row`` with its environment's largest entries left out until it fits in ``cap``; past
    that (an address or message alone too long), a row with no environment and both cut."""
    kept = dict(row.env)
    dropped: list[str] = []
    note = f"environment cut: its row was {size:,} bytes, over the {cap:,}-byte cap"
    by_size = sorted(kept, key=lambda k: len(json.dumps(kept[k], default=str)), reverse=True)
    for key in by_size:
        candidate = _with_note(row, kept, dropped, note)
        if len(_encode(candidate)) <= cap - LENGTH_BYTES:
            return candidate
        del kept[key]
        dropped.append(key)
    candidate = _with_note(row, kept, dropped, note)
    if len(_encode(candidate)) <= cap - LENGTH_BYTES:
        return candidate
    return row.model_copy(
        update={
            "address": row.address[:ADDRESS_CHARS],
            "message": f"{note}; its address and message too",
            "env": {},
        }
    )


def _with_note(row: WorkerRun, env: dict[str, Any], dropped: list[str], note: str) -> WorkerRun:
    said = f"{note}; left out: {', '.join(dropped)}" if dropped else note
    return row.model_copy(update={"env": {**env, TRUNCATED: said}, "message": said})
