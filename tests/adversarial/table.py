"""The adversarial table: a command, its bad input, the exit code and message it must give.

Each ``test_*.py`` beside this file holds one area's rows as data (``CASES``); a new option is
checked the day it is added by adding a row. Rows run in this process through
:func:`gpuscout.cli.main` (fast enough to hold hundreds of rows), each with its own results
store, and the checks are the CLI's promise for bad input: the exit code, one line on stderr
naming the problem, no traceback, nothing printed as ``Infinity`` or ``NaN`` in JSON, no
TensorFlow or PyTorch imported to refuse it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_in_process


@dataclass(frozen=True)
class Case:
    """``gpuscout ARGS`` must exit with ``code`` and say ``says`` (on stderr, or stdout if 0).

    ``{tmp}`` in an argument is this row's own temporary folder; ``files`` are written there
    first (name -> text). ``one_line``: the error is exactly one line (refusals). ``env``: the
    environment variables the row runs with (name -> value; "" unsets one), e.g. what a
    cluster manager would have set.
    """

    args: tuple[str, ...]
    code: int
    says: str
    files: dict[str, str] = field(default_factory=dict)
    one_line: bool = True
    setup: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return " ".join(self.args)[:80]


Outcome = CliResult  # what a row printed and its exit code


def run_case(case: Case, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """Run one row in this process and check the promise every row shares."""
    for name, text in case.files.items():
        (tmp / name).write_text(text)
    if case.setup:
        case.setup(tmp)
    for name, value in case.env.items():
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUSCOUT_DB", str(tmp / "runs.sqlite"))
    monkeypatch.setenv("COLUMNS", "200")
    args = [a.replace("{tmp}", str(tmp)) for a in case.args]
    had_tf = "tensorflow" in sys.modules
    had_torch = "torch" in sys.modules
    outcome = run_in_process(*args)
    where = f"gpuscout {' '.join(args)}\nstdout: {outcome.out[-2000:]}\nstderr: {outcome.err}"
    assert outcome.code == case.code, where
    assert "Traceback" not in outcome.err, where
    shown = outcome.err if case.code else outcome.out
    assert case.says in shown, where
    if case.code == 2 and case.one_line:
        assert len(outcome.err.strip().splitlines()) == 1, where
    if not had_tf:
        assert "tensorflow" not in sys.modules, f"{where}\nTensorFlow was imported"
    if not had_torch:
        assert "torch" not in sys.modules, f"{where}\nPyTorch was imported"
    if "--json" in args and outcome.code == 0:
        json.loads(outcome.out, parse_constant=_refuse)  # strict JSON: no Infinity, no NaN
    return outcome


def _refuse(token: str) -> None:
    raise AssertionError(f"JSON output holds {token}, which is not JSON")


def cases(rows: list[Case]) -> pytest.MarkDecorator:
    """``@cases(CASES)`` on a test taking ``case``: one test per row, named by its command."""
    return pytest.mark.parametrize("case", rows, ids=[r.id for r in rows])
