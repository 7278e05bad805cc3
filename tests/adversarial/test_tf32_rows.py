"""TF32 rows (``--no-tf32``, issue 18): an anchor run measured with the other TF32 setting is
refused, naming the setting and the flag that matches it; the flag takes no value."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.store import Store
from tests.adversarial.table import Case, cases, run_case
from tests.cli.test_tf32 import _a100_run


def _stored_no_tf32_run(tmp: Path) -> None:
    with Store(tmp / "runs.sqlite") as store:
        store.save(_a100_run(False))


ANCHOR = ("predict", "--workload", "resnet50", "--gpus", "a100-40gb-sxm", "--from-run", "1")

CASES = [
    Case(
        ANCHOR,
        2,
        "it ran with TF32 off, this prediction has it on (add --no-tf32 to match)",
        setup=_stored_no_tf32_run,
    ),
    Case((*ANCHOR, "--no-tf32"), 0, "990 - 1,010", setup=_stored_no_tf32_run),  # its interval
    Case(
        ("predict", "--workload", "mlp", "--no-tf32=yes"),
        2,
        "ignored explicit argument",
        one_line=False,
    ),
    Case(("bench", "--no-tf32=0"), 2, "ignored explicit argument", one_line=False),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
