"""The bytes every worker all-gathers to send the chief its row (``measure/worker_rows.py``).

No framework: the backends only move these buffers through their collectives (checked end to
end by tests/scale/test_cluster_e2e.py); here, the packing itself: round trip, the cap, the
truncation of a row that does not fit, and buffers that must be skipped, not trusted.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpuscout.core.records import WorkerRun
from gpuscout.measure import worker_rows
from gpuscout.measure.protocol import Outcome
from gpuscout.measure.stats import summarize
from gpuscout.scale.launch import with_sent_rows

ENV = {"hostname": "node-7", "tensorflow": "2.21.0", "device": "CPU:0", "cpu_cores": 2}


def row(index: int = 1, **update: object) -> WorkerRun:
    fields = {"task_index": index, "address": f"10.0.0.{index}:23456", "status": "ok",
              "samples_per_second": 1234.5, "env": ENV}  # fmt: skip
    return WorkerRun.model_validate({**fields, **update})


def test_a_row_round_trips_in_a_fixed_size_buffer() -> None:
    packed = worker_rows.pack(row())
    assert packed.dtype == np.uint8 and packed.shape == (worker_rows.CAP_BYTES,)
    assert worker_rows.unpack([packed]) == [row()]
    # as TensorFlow moves them: int32 words, gathered one row per rank, back to bytes
    words = np.stack([worker_rows.as_words(worker_rows.pack(row(i))) for i in (0, 1)])
    assert words.dtype == np.int32 and words.shape == (2, worker_rows.CAP_BYTES // 4)
    assert worker_rows.unpack(worker_rows.from_words(words)) == [row(0), row(1)]


def test_rows_come_back_one_per_worker_sorted_by_task_index() -> None:
    # as gathered from 2 workers with 2 devices each: every local replica sends its worker's
    gathered = np.stack([worker_rows.pack(row(i)) for i in (1, 1, 0, 0)])
    assert [w.task_index for w in worker_rows.unpack(gathered)] == [0, 1]


def test_a_row_over_the_cap_is_sent_with_its_environment_cut_and_says_so() -> None:
    big = row(env={**ENV, "packages": "x" * 100_000, "flags": "y" * 50_000})
    (got,) = worker_rows.unpack([worker_rows.pack(big)])
    # the largest entries go first; the host name and the versions stay
    assert {k: got.env[k] for k in ENV} == ENV and "packages" not in got.env
    note = got.env[worker_rows.TRUNCATED]
    assert "over the 65,536-byte cap" in note and "left out: packages" in note
    assert got.message == note and got.samples_per_second == 1234.5 and got.status == "ok"


def test_a_row_that_cannot_fit_at_all_still_goes_without_its_environment() -> None:
    huge = row(address="h" * 100_000, env={"hostname": "n" * 100_000})
    (got,) = worker_rows.unpack([worker_rows.pack(huge)])
    assert got.env == {} and len(got.address) == worker_rows.ADDRESS_CHARS
    assert got.message and "its address and message too" in got.message
    # a cap too small for any row: an empty buffer, which unpack skips
    assert worker_rows.unpack([worker_rows.pack(row(), cap=64)]) == []


@pytest.mark.parametrize(
    "length",
    [0, worker_rows.CAP_BYTES, 2**32 - 1],  # empty; past the buffer's end; absurd
)
def test_a_buffer_whose_length_prefix_is_wrong_is_skipped(length: int) -> None:
    bad = worker_rows.pack(row(0))
    bad[: worker_rows.LENGTH_BYTES] = np.frombuffer(length.to_bytes(4, "big"), np.uint8)
    assert worker_rows.unpack([bad, worker_rows.pack(row(1))]) == [row(1)]


def test_a_buffer_that_is_not_a_valid_row_is_skipped() -> None:
    junk = b'{"task_index": "not a number"}'
    bad = np.zeros(worker_rows.CAP_BYTES, np.uint8)
    bad[:4] = np.frombuffer(len(junk).to_bytes(4, "big"), np.uint8)
    bad[4 : 4 + len(junk)] = np.frombuffer(junk, np.uint8)
    assert worker_rows.unpack([bad, np.zeros(2, np.uint8)]) == []


def test_own_row_is_the_global_batch_over_this_workers_median_step() -> None:
    measured = np.array([0.010, 0.011, 0.012, 0.011, 0.010])
    outcome = Outcome((0.5, *measured.tolist()), 1, "fixed", summarize(measured), "chief", 1.0)
    got = worker_rows.own_row(1, "127.0.0.1:2", outcome, 32, ENV)
    assert got.samples_per_second == pytest.approx(32 / float(np.median(measured)))
    assert (got.task_index, got.address, got.status, got.env) == (1, "127.0.0.1:2", "ok", ENV)
    broke = dataclasses.replace(outcome, broken="NaN loss at step 3")
    broken = worker_rows.own_row(0, "a:1", broke, 32, ENV)
    assert (broken.status, broken.message) == ("diverged", "NaN loss at step 3")


def test_launch_keeps_its_own_rows_and_fills_a_silent_failure_from_the_sent_row() -> None:
    mine = [row(0, exited_after_s=9.0),
            WorkerRun(task_index=1, address="a:2", status="error", message="killed by SIGKILL",
                      exited_after_s=5.0)]  # fmt: skip
    got = with_sent_rows(mine, [row(0, samples_per_second=1.0), row(1)])
    assert got[0] == mine[0]  # its own run's row, with its exit time
    assert (got[1].status, got[1].message, got[1].exited_after_s) == (
        "error", "killed by SIGKILL", 5.0
    )  # fmt: skip
    assert got[1].env == ENV and got[1].samples_per_second == 1234.5


def test_launch_takes_a_worker_that_stored_nothing_from_its_sent_row() -> None:
    """bench stores no run for a worker whose row reached the chief: the launcher's
    placeholder (ok, nothing known) is filled from that row; without the row it is an error
    that says so."""
    placeholder = WorkerRun(task_index=1, address="a:2", status="ok", exited_after_s=4.0)
    (filled,) = with_sent_rows([placeholder], [row(1)])
    assert (filled.status, filled.exited_after_s, filled.env) == ("ok", 4.0, ENV)
    assert filled.samples_per_second == 1234.5
    (lost,) = with_sent_rows([placeholder], [])
    assert lost.status == "error" and "did not reach the chief" in (lost.message or "")
