"""Rows for what a user's model does to the measurement (issue 31): a builder that forks or
leaves workers running is measured, stored and ended with nothing left running; a training
whose loss is NaN/Inf or diverges is stored as "diverged", naming the step (exit 1).

These rows measure, so they run as real processes here too: a measuring child's output goes
to the command's own stderr file, which the in-process runner replaces by a string buffer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases
from tests.conftest import leftovers, run_cli

DATA = Path(__file__).parents[1] / "data"
FORKING = f"{DATA}/forking_models.py"
BROKEN = f"{DATA}/broken_models.py"
FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8", "--json")

CASES = [
    Case(("bench", "--model", f"{FORKING}:forks_a_sleeper", *FAST), 0, '"status": "ok"'),
    Case(("bench", "--model", f"{FORKING}:starts_a_worker", *FAST), 0, '"status": "ok"'),
    Case(("bench", "--model", f"{FORKING}:forks_then_fails", *FAST), 2, "width must be positive"),
    Case(
        ("bench", "--model", f"{BROKEN}:nan_from_the_first_step", *FAST),
        1,
        "failed (diverged): the loss became NaN at step 1",
    ),
    Case(("bench", "--model", f"{BROKEN}:diverges", *FAST), 1, "failed (diverged): "),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The promise every row keeps (see table.run_case), through a real ``gpuscout``."""
    monkeypatch.setenv("GPUSCOUT_DB", str(tmp_path / "runs.sqlite"))
    r = run_cli(*case.args, timeout=180)
    where = f"gpuscout {' '.join(case.args)}\nstdout: {r.out[-2000:]}\nstderr: {r.err}"
    assert r.code == case.code, where
    assert "Traceback" not in r.err, where
    assert case.says in (r.err if case.code else r.out), where
    if case.code == 2:
        assert len(r.err.strip().splitlines()) == 1, where
    if r.code == 0:
        json.loads(r.out, parse_constant=_refuse)  # strict JSON: no Infinity, no NaN
    assert not leftovers(), where


def _refuse(token: str) -> None:
    raise AssertionError(f"JSON output holds {token}, which is not JSON")
