"""Rows for the job and advice options of ``scout`` and ``report`` (issue 30): a job that
cannot be priced is refused in a moment, before anything is measured or TensorFlow loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case
from tests.report.runs import report_runs

MODEL = str(Path(__file__).parents[1] / "data" / "user_models.py") + ":compiled_regressor"


def _stored(tmp: Path) -> None:
    from gpuscout.store import Store

    with Store(str(tmp / "runs.sqlite")) as store:
        store.save_many(report_runs())


REPORT = ("report", "--md", "{tmp}/r.md")
CASES = [
    Case((*REPORT, "--job", "nosuch"), 2, "unknown workload 'nosuch'", setup=_stored),
    Case((*REPORT, "--job", "run:x"), 2, "--job 'run:x': the run id", setup=_stored),
    Case((*REPORT, "--job", "run:0"), 2, "--job 'run:0': the run id must be", setup=_stored),
    Case((*REPORT, "--job", "run:99"), 2, "no run with id 99", setup=_stored),
    Case((*REPORT, "--job", "{tmp}/gone.py:build"), 2, "does not exist", setup=_stored),
    Case((*REPORT, "--model", MODEL), 2, "the job needs its size", setup=_stored),
    Case((*REPORT, "--model", MODEL, "--epochs", "5"), 2, "add --samples N", setup=_stored),
    Case((*REPORT, "--job", "mlp", "--model", MODEL), 2, "not allowed with argument"),
    Case((*REPORT, "--require", "wings"), 2, "unknown feature 'wings' in --require"),
    Case((*REPORT, "--provider", "nowhere"), 2, "unknown provider 'nowhere' in --provider"),
    Case((*REPORT, "--no-cloud"), 2, "--no-cloud leaves no option to rank"),
    Case((*REPORT, "--objective", "prettiest"), 2, "invalid choice: 'prettiest'"),
    Case((*REPORT, "--deadline", "0h"), 2, "--deadline"),
    Case((*REPORT, "--budget", "-5"), 2, "--budget"),
    Case(("scout", "--seconds", "5"), 2, "--seconds is how long to measure your model"),
    Case(("scout", "--model", "{tmp}/gone.py:build", "--samples", "9"), 2, "does not exist"),
    Case(("scout", "--model", MODEL), 2, "the job needs its size"),
    Case(("scout", "--model", MODEL, "--seconds", "0"), 2, "--seconds"),
    Case(("scout", "--job", "run:3"), 2, "no results database"),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_scout_refuses_a_job_without_a_size_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is measured or stored for a job that could not be priced afterwards."""
    run_case(Case(("scout", "--model", MODEL, "--epochs", "3"), 2, "add --samples N"),
             tmp_path, monkeypatch)  # fmt: skip
    from gpuscout.store import Store

    with Store(str(tmp_path / "runs.sqlite"), readonly=True) as store:
        assert store.list(limit=None) == []
