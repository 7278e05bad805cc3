"""Imports whose figures contradict each other, and PostgreSQL addresses that cannot work.

Every value of these runs is finite and in range alone (``test_store_rows.py`` has those); here
two figures disagree, as no measured run's can (``store/consistency.py``), and the import is
refused whole, naming the file, the run and the contradiction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case
from tests.adversarial.test_store_rows import BAD_RUN, IMPORT, _file, _sps

STEP = {"median": 0.00266, "p5": 0.0026, "p95": 0.0028, "mean": 0.00267}
SECRET = "hunter2"
CASES = [
    # 1e308 samples/s with batch 256 and a 2.66 ms median step (it printed "infx faster")
    Case(IMPORT, 2, f"{BAD_RUN} 'samples_per_second': median 1e+308 samples/s contradicts "
         "batch 256 over the median step of 0.00266 s",
         _file(samples_per_second=_sps(1e308, None, None), batch_size=256, step_time_s=STEP)),
    Case(IMPORT, 2, "(1000 samples/s, 5% allowed)",
         _file(samples_per_second=_sps(1200.0, None, None))),  # batch 32 / 0.032 s = 1000
    Case(IMPORT, 2, "'step_time_s.median': a median step of 1e-300 s is shorter than any",
         _file(samples_per_second=_sps(3.2e301, None, None),
               step_time_s={"median": 1e-300, "p5": 1e-300, "p95": 1e-300, "mean": 1e-300})),
    Case(IMPORT, 2, "'measured_steps': 1,000,000 measured steps, but only 4 step times",
         _file(measured_steps=1_000_000)),
    Case(IMPORT, 2, "field 'mfu': 1e+300 is 1e+300x the peak", _file(mfu=1e300)),
    Case(IMPORT, 2, "field 'mfu': 0.9 contradicts tflops 10 over the peak 100",
         _file(mfu=0.9, tflops=10.0, peak_tflops=100.0)),
    Case(IMPORT, 2, "ci_low 1500 is above the median 1000",  # interval not around its median
         _file(samples_per_second=_sps(1000.0, 1500.0, 1600.0))),
    # within the tolerance, and an MFU above 1 kept (calibration leaves it out, naming it)
    Case(IMPORT, 0, "imported 2 run(s)", _file(samples_per_second=_sps(1040.0, None, None))),
    Case(IMPORT, 0, "imported 2 run(s)", _file(mfu=1.3)),
    # PostgreSQL addresses: one line, the password never shown
    Case(("runs", "list", "--db", f"postgresql://u:{SECRET}@127.0.0.1:abc/db"), 2,
         "its port is not a number"),
    Case(("runs", "list", "--db", f"postgresql://u@127.0.0.1:1/db?password={SECRET}"), 2,
         "cannot open the database 'postgresql+psycopg://u:***@127.0.0.1:1/db'"),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_case(case, tmp_path, monkeypatch)
    assert SECRET not in outcome.out + outcome.err
    if case.code == 2 and case.args[:2] == ("runs", "import"):
        assert not (tmp_path / "runs.sqlite").exists()  # nothing stored, nothing created
