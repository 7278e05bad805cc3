"""Rows for what a user's model does to the measurement (issue 31): a builder that forks or
leaves workers running is measured, stored and ended with nothing left running; a training
whose loss is NaN/Inf or diverges is stored as "diverged", naming the step (exit 1), and so is
one whose loss stays finite while its weights are NaN (a NaN that a ReLU turned into 0).

These rows measure, so they run as real processes here too: a measuring child's output goes
to the command's own stderr file, which the in-process runner replaces by a string buffer.
Each row is also the one test of its case (a measurement costs a TensorFlow start-up), so
after the promise every row keeps, :data:`CHECKS` checks what the case is about: the stored
run, the step named, and every process the builder started ended (``left_running``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuscout.core.records import RunResult
from tests.adversarial.table import Case, cases
from tests.conftest import leftovers, run_cli
from tests.measure.test_child_group import left_running

DATA = Path(__file__).parents[1] / "data"
FORKING = f"{DATA}/forking_models.py"
BROKEN = f"{DATA}/broken_models.py"
FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8", "--json")
NAN = "the loss became NaN at step 1"
HIDDEN = "the loss stayed finite, but 1 of 4 weight tensors hold NaN/Inf"

CASES = [
    Case(("bench", "--model", f"{FORKING}:forks_a_sleeper", *FAST), 0, '"status": "ok"'),
    Case(("bench", "--model", f"{FORKING}:starts_a_worker", *FAST), 0, '"status": "ok"'),
    Case(("bench", "--model", f"{FORKING}:forks_then_fails", *FAST), 2, "width must be positive"),
    Case(
        ("bench", "--model", f"{BROKEN}:nan_from_the_first_step", *FAST),
        1,
        f"failed (diverged): {NAN}",
    ),
    Case(("bench", "--model", f"{BROKEN}:diverges", *FAST), 1, "failed (diverged): "),
    Case(
        ("bench", "--model", f"{BROKEN}:nan_hidden_from_the_loss", *FAST),
        1,
        f"failed (diverged): {HIDDEN}",
    ),
]


def _stored(db: Path) -> list[tuple[str, str]]:
    return sqlite3.connect(db).execute("select status, result_json from runs").fetchall()


def _stored_ok(db: Path, out: str, pids: Path) -> None:
    """The run is stored as measured, and the worker the builder left is ended."""
    assert [status for status, _ in _stored(db)] == ["ok"]
    assert left_running(pids) == []


def _refused(db: Path, out: str, pids: Path) -> None:
    """A builder that forked and then failed: refused, nothing stored, its worker ended."""
    assert not db.exists() or _stored(db) == []
    assert left_running(pids) == []


def _diverged(says: str) -> Callable[[Path, str, Path], None]:
    def check(db: Path, out: str, pids: Path) -> None:
        run = json.loads(out)
        assert run["status"] == "diverged" and says in run["message"], run
        assert run["measured_steps"] == 5 and run["samples_per_second"]  # the timing is kept
        ((status, text),) = _stored(db)
        assert status == "diverged"
        assert RunResult.model_validate(json.loads(text)).message == run["message"]

    return check


CHECKS: dict[str, Callable[[Path, str, Path], None]] = {
    "forks_a_sleeper": _stored_ok,
    "starts_a_worker": _stored_ok,
    "forks_then_fails": _refused,
    "nan_from_the_first_step": _diverged(NAN),
    "diverges": _diverged("learning rate"),
    "nan_hidden_from_the_loss": _diverged(HIDDEN),
}


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The promise every row keeps (see table.run_case), through a real ``gpuscout``; then
    what the case is about (CHECKS)."""
    db, pids = tmp_path / "runs.sqlite", tmp_path / "pids.txt"
    monkeypatch.setenv("GPUSCOUT_DB", str(db))
    monkeypatch.setenv("GPUSCOUT_TEST_PIDS", str(pids))  # the forking builders write theirs
    # run_cli reads the command's stderr to its end: a worker still holding it fails here.
    r = run_cli(*case.args, timeout=180)
    where = f"gpuscout {' '.join(case.args)}\nstdout: {r.out[-2000:]}\nstderr: {r.err}"
    assert r.code == case.code, where
    assert "Traceback" not in r.err, where
    assert case.says in (r.err if case.code else r.out), where
    if case.code == 2:
        assert len(r.err.strip().splitlines()) == 1, where
    if r.out.strip():
        json.loads(r.out, parse_constant=_refuse)  # strict JSON: no Infinity, no NaN
    builder = case.args[2].rsplit(":", 1)[1]
    CHECKS[builder](db, r.out, pids)
    assert not leftovers(), where


def _refuse(token: str) -> None:
    raise AssertionError(f"JSON output holds {token}, which is not JSON")
