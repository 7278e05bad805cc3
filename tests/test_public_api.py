"""The public API and the layering rule: only measure/ imports TensorFlow."""

from __future__ import annotations

import subprocess
import sys

import gpuscout
from tests.conftest import BLOCK_TF


def test_all_is_sorted_and_resolves() -> None:
    assert gpuscout.__all__ == sorted(gpuscout.__all__)
    for name in gpuscout.__all__:
        assert getattr(gpuscout, name) is not None


def test_non_measuring_modules_import_without_tensorflow() -> None:
    modules = [
        "gpuscout",
        "gpuscout.cli",
        "gpuscout.store",
        "gpuscout.records",
        "gpuscout.units",
        "gpuscout.report.terminal",
        "gpuscout.measure",
        "gpuscout.measure.stats",
        "gpuscout.measure.protocol",
        "gpuscout.measure.workloads",
        "gpuscout.cli.progress",
        "gpuscout.catalog",
        "gpuscout.catalog.views",
        "gpuscout.audit",
        "gpuscout.report.catalog_tables",
        "gpuscout.report.audit_table",
        "gpuscout.predict",
        "gpuscout.predict.calibrate",
        "gpuscout.predict.profile",
        "gpuscout.cli.predict",
        "gpuscout.price",
        "gpuscout.advise",
        "gpuscout.cli.advise",
        "gpuscout.cli.cost",
        "gpuscout.diagnosis",
        "gpuscout.measure.monitor",
        "gpuscout.measure.nvml",
        "gpuscout.measure.diagnose",
        "gpuscout.measure.doctor",
        "gpuscout.measure.soak",
        "gpuscout.measure.batch_search",
        "gpuscout.report.doctor_view",
        "gpuscout.report.soak_view",
        "gpuscout.cli.doctor",
        "gpuscout.cli.soak",
        "gpuscout.measure.distribute",
        "gpuscout.measure.sweep",
        "gpuscout.measure.launch",
        "gpuscout.cli.launch",
        "gpuscout.report.scaling_table",
        "gpuscout.store.exchange",
        "gpuscout.comparison",
        "gpuscout.report.compare_table",
        "gpuscout.cli.runs",
        "gpuscout.report.document",
        "gpuscout.report.charts",
        "gpuscout.report.html",
        "gpuscout.report.markdown",
        "gpuscout.report.scout_summary",
        "gpuscout.cli.report",
        "gpuscout.scout",
        "gpuscout.cli.scout",
        "gpuscout.publish.to_mlflow",
        "gpuscout.measure.latency",
        "gpuscout.report.latency_table",
    ]
    code = (
        BLOCK_TF
        + "".join(f"import {m}\n" for m in modules)
        + ("assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules\n")
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_blocker_really_blocks() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK_TF + "import tensorflow"], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "blocked by the test" in proc.stderr


def test_cli_blocker_reaches_child_processes() -> None:
    """run_cli(block_tf=True) blocks TensorFlow in the measuring child too: a real bench fails."""
    from tests.conftest import run_cli

    r = run_cli("bench", "-w", "mlp", "--steps", "3", block_tf=True)
    assert r.code != 0 and "TensorFlow is not installed" in r.err


def test_specs_and_audit_stay_light() -> None:
    """The catalog commands load neither TensorFlow, nor SciPy, nor the store (SQLAlchemy)."""
    code = BLOCK_TF + (
        "import io, contextlib\n"
        "from gpuscout.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['specs', '4090', 'h100']) == 0\n"
        "    assert main(['audit', '--gpu', 't4', '--workload', 'resnet50',"
        " '--epoch-seconds', '900']) == 0\n"
        "heavy = {'tensorflow', 'scipy', 'sqlalchemy'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
