"""Rows for contradictory options on ``report`` and ``scout`` (issue 31): where one option
would silently override another, the command refuses in one line naming both, before the
store is read, a model traced or anything measured (the rows run in this process and check
that TensorFlow was not imported). Pairs argparse or the advice's constraints already refuse
are rows too, so the survey of both commands' options is written down here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

MODEL_FILE = "def build():\n    raise AssertionError('never built: refused before')\n"
REPORT = ("report", "--md", "{tmp}/r.md")
SCOUT = ("scout", "--html", "{tmp}/r.html")
MODEL = ("--model", "{tmp}/m.py:build")


def _model_and_link(tmp: Path) -> None:
    """A model file and a symlink to it: a report written to the link replaces the model."""
    (tmp / "m.py").write_text(MODEL_FILE)
    (tmp / "link.py").symlink_to(tmp / "m.py")


def _fp32_run(tmp: Path) -> None:
    """A stored fp32 run of the MLP (a shipped profile at every precision: nothing traced)."""
    from gpuscout.core.records import BenchConfig, Interval, RunResult
    from gpuscout.store import Store

    run = RunResult(
        created_at="2026-12-06T00:00:00Z", status="ok", workload="mlp", device="CPU",
        precision="fp32", xla=False, loop="custom", batch_size=256,
        samples_per_second=Interval(median=9000.0, ci_low=8900.0, ci_high=9100.0),
        config=BenchConfig(workload="mlp", precision="fp32", batch_size=256), env={},
    )  # fmt: skip
    with Store(str(tmp / "runs.sqlite")) as store:
        store.save(run)


CASES = [
    # the job's size given two ways: --steps is the whole job by itself
    Case((*REPORT, "--steps", "10", "--epochs", "3"), 2,
         "--steps and --epochs contradict each other"),
    Case((*REPORT, "--job", "mlp", "--steps", "10", "--samples", "5"), 2,
         "--steps and --samples contradict each other"),
    Case((*SCOUT, "--steps", "10", "--epochs", "3"), 2, "--steps and --epochs contradict"),
    Case((*SCOUT, *MODEL, "--steps", "10", "--samples", "9"), 2,
         "--steps and --samples contradict", files={"m.py": MODEL_FILE}),
    # a report file that is a file the command reads: the report would replace it
    Case(("report", "--md", "{tmp}/m.py", *MODEL, "--samples", "9"), 2,
         "m.py and --model contradict each other: the report would overwrite the model file"),
    Case(("report", "--html", "{tmp}/m.keras", "--job", "{tmp}/m.keras", "--samples", "9"), 2,
         "m.keras and --job contradict each other"),
    Case(("report", "--html", "{tmp}/c.csv", "--catalog", "{tmp}/c.csv"), 2,
         "c.csv and --catalog contradict each other: the report would overwrite the catalog"),
    Case(("scout", "--html", "{tmp}/link.py", *MODEL, "--samples", "9"), 2,
         "link.py and --model contradict each other", setup=_model_and_link),
    Case(("scout", "--md", "{tmp}/m.py", "--job", "{tmp}/m.py:build", "--samples", "9"), 2,
         "m.py and --job contradict each other", setup=_model_and_link),
    # already refused (argparse, the output files, the advice's constraints): kept as rows
    Case((*REPORT, "--runs", "1", "--latest"), 2, "--latest: not allowed with argument --runs"),
    Case((*REPORT, "--job", "mlp", "--from-run", "1"), 2, "not allowed with argument --job"),
    Case((*SCOUT, "--job", "mlp", *MODEL), 2, "not allowed with argument --job"),
    Case(("report", "--html", "{tmp}/r", "--md", "{tmp}/r"), 2, "--html and --md both name"),
    Case((*SCOUT, "--owned", "--no-cloud", "--provider", "aws"), 2,
         "--no-cloud leaves out every cloud provider, so --provider aws"),
    Case((*SCOUT, "--no-cloud"), 2, "--no-cloud leaves no option to rank"),
    Case((*SCOUT, "--job", "run:1", "--seconds", "5"), 2, "--seconds is how long to measure",
         setup=_fp32_run),
    # a --precision typed beside a stored run wins, even the default one (it was dropped)
    Case(("advise", "--from-run", "1", "--samples", "1000", "--precision", "mixed_float16",
          "--json"), 0, "batch 256 per GPU, mixed_float16", setup=_fp32_run),
    Case(("advise", "--from-run", "1", "--samples", "1000", "--json"), 0,
         "batch 256 per GPU, fp32", setup=_fp32_run),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
