"""Rows for buy versus rent (issue 33, item 5): owned GPUs bought new (``@owned``) or used
(``@used``), their purchase prices and the assumptions that set the break-even. Each bad value
is one line naming it and how to fix it, exit 2; nothing is priced."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

JOB = ("cost", "--gpu-hours", "100")
USED = (*JOB, "--option", "4090@used")
PRICE_HEADER = "gpu_id,provider,kind,usd_per_gpu,observed_on,source,retrieved_on\n"

CASES = [
    Case((*JOB, "--option", "4090@owned", "--used-price", "rtx-4090=500"), 2,
         "--used-price rtx-4090=500 prices GPUs bought used, but no --option is @used"),
    Case((*USED, "--purchase", "rtx-4090=1599"), 2,
         "--purchase rtx-4090=1599 prices GPUs bought new, but no --option is @owned"),
    Case((*JOB, "--used-price", "rtx-4090=500"), 2,
         "--used-price rtx-4090=500 is an owned GPU's cost, but no --option is owned"),
    Case((*USED, "--used-price", "rtx-4090=-5"), 2, "must be above 0 and at most 1e+09, got -5"),
    Case((*USED, "--used-price", "rtx-4090=nan"), 2, "must be a finite number, got nan"),
    Case((*USED, "--used-price", "rtx-4090"), 2, "--used-price"),
    Case((*USED, "--used-price", "rtx-4999=500"), 2, "unknown GPU 'rtx-4999'"),
    Case((*JOB, "--option", "4090@used=1.5"), 2, "an owned GPU has no price per hour"),
    Case((*JOB, "--option", "5080@used"), 2, "no used price for rtx-5080 in the catalog"),
    Case((*USED, "--usd-per-kwh", "inf"), 2, "--usd-per-kwh: must be a finite number"),
    Case((*USED, "--usd-per-kwh", "-0.1"), 2, "--usd-per-kwh"),
    Case((*USED, "--amortize-years", "0"), 2, "--amortize-years: must be above 0"),
    Case((*USED, "--owned-utilization", "1.5"), 2, "--owned-utilization: must be above 0"),
    Case((*USED, "--power-utilization", "0"), 2, "--power-utilization: must be above 0"),
    # a user's used price in the future, or in cents rather than dollars
    Case((*USED, "--catalog", "{tmp}/used.csv"), 2, "is in the future",
         files={"used.csv": PRICE_HEADER + "rtx-4090,ebay,purchase_used,900,2099-01-01,me,"
                "2026-01-01\n"}),
    Case((*USED, "--catalog", "{tmp}/used.csv"), 2, "is outside",
         files={"used.csv": PRICE_HEADER + "rtx-4090,ebay,purchase_used,0.9,2026-01-01,me,"
                "2026-01-01\n"}),
    # the good case: a used price of yours is shown as yours
    Case((*USED, "--used-price", "rtx-4090=1500"), 0, "$1,500 per GPU, used (yours)",
         one_line=False),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
