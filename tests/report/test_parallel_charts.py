"""The HTML report's charts drawn side by side in forked workers (issue 42: report --html under
3 s for 100 runs) are the charts one process draws: the same SVG, in the same order.

Run in a fresh interpreter: the workers are only used by a process with no other thread (a
test worker may hold some), as by the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gpuscout.report.html as html
from gpuscout.catalog import load_catalog
from gpuscout.predict.job import JobSpec, resolve_job
from gpuscout.report.document import build_report
from tests.report.runs import report_runs

pools = []
class Counted(html.ProcessPoolExecutor):
    def __init__(self, *args, **kwargs):
        pools.append(1)
        super().__init__(*args, **kwargs)
html.ProcessPoolExecutor = Counted
html.usable_cores = lambda: 2  # as on the 2-core machines
catalog = load_catalog()
job = resolve_job(JobSpec(workload="resnet50", epochs=90), catalog)
report = build_report(report_runs(), catalog, job=job)
report.generated_at = "fixed"
side_by_side = html.render_html(report)
html.MAX_WORKERS = 1
one_process = html.render_html(report)
print(pools, side_by_side == one_process, side_by_side.count("<svg"))
"""


def test_charts_drawn_in_workers_are_the_charts_drawn_in_one_process() -> None:
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=root, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pools, same, charts = done.stdout.strip().splitlines()[-1].rsplit(" ", 2)
    assert pools == "[1]"  # the forked workers drew them (then one process did)
    assert same == "True" and int(charts) >= 3
