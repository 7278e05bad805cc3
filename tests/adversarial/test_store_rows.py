"""The results store's refusals: hostile and impossible imports, a typo'd --db, runs delete.

Each import row writes one file whose second run is bad in one way, and must be refused in one
line naming the file, the run and the field, with nothing of the file stored (the row's
database is not even created). Read-only files and folders need another user than root, so
they are ordinary tests (tests/store/test_readonly.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuscout.core.records import BenchConfig, Interval, RunResult, StepTimes
from gpuscout.store import Store
from gpuscout.store.exchange import export_json
from tests.adversarial.table import Case, cases, run_case


def _run(i: int = 0) -> RunResult:
    return RunResult(
        created_at="2026-12-02T12:00:00+00:00",
        status="ok",
        workload="mlp",
        device="CPU:0",
        precision="fp32",
        xla=False,
        loop="custom",
        batch_size=32,
        samples_per_second=Interval(median=1000.0 + i, ci_low=990.0, ci_high=1010.0 + i),
        step_time_s=StepTimes(median=0.032, p5=0.031, p95=0.034, mean=0.0322),
        config=BenchConfig(),
        step_times_s=[0.5, 0.032, 0.031, 0.033],
    )


GOOD: dict[str, Any] = json.loads(export_json([_run(0), _run(1)]))


def _file(raw: str | None = None, **change: Any) -> dict[str, str]:
    """An import file (runs.json) whose second run has ``change`` applied."""
    if raw is not None:
        return {"runs.json": raw}
    second = {**GOOD["runs"][1], **change}
    return {"runs.json": json.dumps({**GOOD, "runs": [GOOD["runs"][0], second]})}


def _sps(median: float, low: float | None, high: float | None) -> dict[str, Any]:
    return {"median": median, "ci_low": low, "ci_high": high}


def _stored(tmp: Path) -> None:
    """The row's database with two runs (ids 1 and 2)."""
    with Store(tmp / "runs.sqlite", announce=False) as store:
        store.save_many([_run(0), _run(1)])


IMPORT = ("runs", "import", "{tmp}/runs.json")
BAD_RUN = "runs.json': run 2 (index 1): field"
CASES = [
    # ordered intervals: this one made every later 'report' on the database crash
    Case(IMPORT, 2, f"{BAD_RUN} 'samples_per_second': ci_low 1500 is above the median 1001",
         _file(samples_per_second=_sps(1001.0, 1500.0, 1600.0))),
    Case(IMPORT, 2, "ci_high 900 is below the median 1001",
         _file(samples_per_second=_sps(1001.0, 800.0, 900.0))),
    Case(IMPORT, 2, "'samples_per_second': median -5 is impossible: it must be positive",
         _file(samples_per_second=_sps(-5.0, None, None))),
    Case(IMPORT, 2, "median 0 is impossible", _file(samples_per_second=_sps(0.0, None, None))),
    Case(IMPORT, 2, "'mean_samples_per_second': -1 is impossible",
         _file(mean_samples_per_second=-1.0)),
    Case(IMPORT, 2, f"{BAD_RUN} 'step_times_s.2': -0.01 is impossible",
         _file(step_times_s=[0.5, 0.03, -0.01])),
    Case(IMPORT, 2, "'step_time_s.median': -0.032 is impossible",
         _file(step_time_s={"median": -0.032, "p5": 0.031, "p95": 0.034, "mean": 0.03})),
    Case(IMPORT, 2, "'step_time_s': p5 <= median <= p95 does not hold",
         _file(step_time_s={"median": 0.032, "p5": 0.04, "p95": 0.034, "mean": 0.03})),
    Case(IMPORT, 2, f"{BAD_RUN} 'created_at': 'yesterday' is not an ISO 8601 date",
         _file(created_at="yesterday")),
    Case(IMPORT, 2, "run 2 (index 1, id 17): field 'created_at'",
         _file(created_at="2026-13-45T00:00:00", id=17)),
    Case(IMPORT, 2, "'batch_size': 0 is impossible: it must be at least 1", _file(batch_size=0)),
    Case(IMPORT, 2, "'epoch_seconds': -3 is impossible", _file(epoch_seconds=-3.0)),
    Case(IMPORT, 2, "'batch_size': a 301-digit number is impossible", _file(batch_size=10**300)),
    Case(IMPORT, 2, "'mfu': -0.5 is impossible", _file(mfu=-0.5)),
    Case(IMPORT, 2, "'peak_memory_bytes': -1 is impossible", _file(peak_memory_bytes=-1)),
    Case(IMPORT, 2, "field 'device' holds a NUL character", _file(device="CPU:0\x00evil")),
    Case(IMPORT, 2, "field 'samples_per_second.ci_high' is not a finite number",
         _file(raw=json.dumps(GOOD).replace("1010.0", "1e999"))),
    Case(IMPORT, 2, "is not valid JSON", _file(raw=json.dumps(GOOD)[:-40])),
    Case(IMPORT, 2, "is not valid JSON: extra data", _file(raw=json.dumps(GOOD) + "{}")),
    Case(IMPORT, 2, "field 'runs'", _file(raw=json.dumps({**GOOD, "runs": 3}))),
    Case(IMPORT, 2, "field 'runs': Field required",
         _file(raw=json.dumps({k: v for k, v in GOOD.items() if k != "runs"}))),
    # control characters other than NUL are stored (renderers neutralise them)
    Case(IMPORT, 0, "imported 2 run(s)", _file(device="CPU:0\r\nInjected: x\x1b[2J")),
    # a typo'd --db: read commands say so and create nothing
    Case(("runs", "list", "--db", "{tmp}/typo.db"), 2, "no results database at"),
    Case(("runs", "show", "1", "--db", "{tmp}/typo.db"), 2, "check --db and GPUSCOUT_DB"),
    Case(("runs", "export", "--db", "{tmp}/typo.db"), 2, "no results database at"),
    Case(("report", "--md", "{tmp}/r.md", "--db", "{tmp}/typo.db"), 2, "no results database at"),
    Case(("runs", "list", "--limit", "-1"), 2, "--limit"),
    # runs delete
    Case(("runs", "delete", "1"), 2, "no terminal to ask on. To fix: add --yes", setup=_stored),
    Case(("runs", "delete", "2,7,9", "--yes"), 2, "no runs with ids 7, 9", setup=_stored),
    Case(("runs", "delete", "1", "--yes"), 2, "no results database at"),
    Case(("runs", "delete", "0", "--yes"), 2, "must be a whole number at least 1"),
    Case(("runs", "delete", "3,x", "--yes"), 2, "'x' is not a whole number"),
    Case(("runs", "delete", "2", "--yes"), 0, "deleted 1 run(s): 2", setup=_stored),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
    if case.code == 2 and case.args[:2] == ("runs", "import"):
        assert not (tmp_path / "runs.sqlite").exists()  # nothing stored, nothing created
    if "typo.db" in " ".join(case.args):
        assert not (tmp_path / "typo.db").exists()
    if case.args[:2] == ("runs", "delete") and case.setup:
        with Store(tmp_path / "runs.sqlite", readonly=True) as store:
            left = [r.id for r in store.list()]
        assert left == ([1] if case.code == 0 else [2, 1])  # unknown ids: nothing deleted
