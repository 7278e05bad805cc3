"""The report's golden files under two numeric environments (``make``-able proof that what a
report prints does not depend on the CPU's floating-point kernels).

OpenBLAS picks its kernels by CPU (``OPENBLAS_CORETYPE``) and its thread count changes the
order of summation, so scipy's least-squares calibration lands on slightly different last
digits on different machines. For each environment this prints the fit at full precision (the
digits that differ) and a hash of the Markdown report (which must not), then runs the golden
tests there. Exit status 0 only if every environment passes and the reports are identical.

    python benchmarks/numeric_environments.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENVIRONMENTS: dict[str, dict[str, str]] = {
    "as installed": {},
    "Prescott kernels, 1 thread": {
        "OPENBLAS_CORETYPE": "Prescott",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    },
}
PROBE = """
import hashlib, tempfile
from pathlib import Path
from gpuscout.catalog import load_catalog
from gpuscout.predict.calibration_points import published_points
from gpuscout.predict.calibrate import fit_calibration
from gpuscout.assemble import JobChoice, choose_job, report_on
from gpuscout.predict.job import JobSpec
from gpuscout.report.markdown import render_markdown
from gpuscout.store import Store
from tests.report.runs import report_runs

catalog = load_catalog()
c = fit_calibration(published_points(catalog))
print(f"  fit, full precision: tensor {c.tensor!r}, scaling {c.scaling!r}, power {c.power_w!r}")
with Store(Path(tempfile.mkdtemp()) / "r.sqlite") as store:
    runs = store.save_many(report_runs())
report = report_on(runs, catalog, choose_job(JobChoice(JobSpec()), catalog))  # as the CLI
text = render_markdown(report).replace(report.generated_at, "TIME")
print("  report.md sha256:", hashlib.sha256(text.encode()).hexdigest())
"""


def main() -> int:
    hashes, failed = set(), []
    for name, extra in ENVIRONMENTS.items():
        env = {**os.environ, **extra, "PYTHONPATH": str(ROOT)}
        print(f"{name}: {' '.join(f'{k}={v}' for k, v in extra.items()) or '(no overrides)'}")
        probe = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True
        )
        print(probe.stdout + probe.stderr, end="")
        hashes.update(line.split()[-1] for line in probe.stdout.splitlines() if "sha256" in line)
        tests = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header",
             "tests/report/test_report.py", "-k", "golden"],
            env=env, cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        summary = [
            line for line in tests.stdout.splitlines() if " passed" in line or "failed" in line
        ]
        print(f"  golden tests: {summary[-1] if summary else tests.stdout[-500:]}")
        if tests.returncode != 0 or probe.returncode != 0:
            failed.append(name)
    same = len(hashes) == 1
    print(f"reports identical across environments: {'yes' if same else 'NO'}")
    return 0 if same and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
