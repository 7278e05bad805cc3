"""Rows for contradictory options and impossible user data (issue 31): options one of which a
command would drop unsaid, a date in the future and a duplicate id in a user catalog file, a
model shape no transformer has. Each is one line naming both sides, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.catalog.catalog import data_dir
from tests.adversarial.table import Case, cases, run_case

PRICE_HEADER = "gpu_id,provider,kind,usd_per_gpu_hour,observed_on,source,retrieved_on\n"
FUTURE_PRICE = PRICE_HEADER + "rtx-4090,acme,on_demand,0.01,2099-01-05,me,2026-01-01\n"
FUTURE_RETRIEVED = PRICE_HEADER + "rtx-4090,acme,on_demand,0.31,2026-01,me,2099-01-01\n"
DUPLICATE_PRICE = PRICE_HEADER + (
    "rtx-4090,acme,on_demand,0.31,2026-01,me,2026-01-01\n"
    "rtx-4090,acme,on_demand,0.29,2026-01,me,2026-01-01\n"
)
_SHIPPED = (data_dir() / "gpus.csv").read_text().splitlines()
_REST = _SHIPPED[1].split(",", 3)[3]  # an RTX 3090's figures, after id, name and aliases
DUPLICATE_GPU = f"{_SHIPPED[0]}\nmy-3090,Mine,,{_REST}\nmy-3090,Mine too,,{_REST}\n"
LLM = ("memory", "--params", "7e9", "--layers", "32", "--hidden", "4096")
ANSWERS = ("advise", "--quick", "--answers", "y,n,y,n")
COST = ("cost", "--gpu-hours", "100")
MD = ("report", "--md", "{tmp}/r.md")

CASES = [
    # cost
    Case((*COST, "--no-failures", "--failures-consumer", "5"), 2,
         "--no-failures and --failures-consumer contradict each other"),
    Case((*COST, "--no-failures", "--checkpoint-hours", "2"), 2,
         "--no-failures and --checkpoint-hours contradict"),
    Case((*COST, "--reference", "rtx-4090", "--speedup", "4090=5"), 2,
         "--speedup 4090=5 and --reference rtx-4090 contradict each other"),
    Case((*COST, "--precision", "fp32"), 2, "--gpu-hours and --precision contradict"),
    Case((*COST, "--batch-size", "64"), 2, "--gpu-hours and --batch-size contradict"),
    Case(("cost", "--example", "articles", "--workload", "mlp"), 2,
         "--example articles and --workload contradict"),
    Case(("cost", "--example", "articles", "--failures-datacenter", "1"), 2,
         "--example articles and --failures-datacenter contradict"),
    Case((*COST, "--usd-per-kwh", "0.3"), 2, "--usd-per-kwh 0.3 is an owned GPU's cost"),
    Case((*COST, "--purchase", "rtx-4090=1599"), 2, "--purchase rtx-4090=1599 is an owned"),
    # advise
    Case((*ANSWERS, "--workload", "mlp"), 2, "--quick and --workload contradict each other"),
    Case((*ANSWERS, "--epochs", "3"), 2, "--quick and --epochs contradict"),
    Case((*ANSWERS, "--deadline", "48h"), 2, "--quick and --deadline contradict"),
    Case((*ANSWERS, "--counts", "1,8"), 2, "--quick and --counts contradict"),
    Case((*ANSWERS, "--preset", "sme"), 2, "--quick and --preset contradict"),
    Case(("advise", "--workload", "mlp", "--answers", "y,n,y,n"), 2,
         "--answers y,n,y,n answers the --quick checklist"),
    Case(("advise", "--workload", "mlp", "--owned", "--no-cloud", "--provider", "aws"), 2,
         "--no-cloud leaves out every cloud provider, so --provider aws"),
    Case((*MD, "--owned", "--no-cloud", "--provider", "aws"), 2,
         "--no-cloud leaves out every cloud provider"),
    # memory
    Case((*LLM, "--heads", "30"), 2, "--heads 30 does not divide --hidden 4096"),
    Case(("memory", "--params", "7e9", "--layers", "32", "--hidden", "8", "--heads", "32"),
         2, "--heads 32 does not divide --hidden 8"),
    Case((*LLM, "--heads", "32", "--mode", "lora", "--lora-rank", "5000"), 2,
         "--lora-rank 5000 is larger than --hidden 4096"),
    Case((*LLM, "--heads", "32", "--lora-rank", "8"), 2,
         "--lora-rank 8 and --mode full contradict"),
    Case(("memory", "--params", "1e6", "--layers", "32", "--hidden", "4096", "--heads", "32"),
         2, "--params 1e+06 is fewer than 32 layers of hidden size 4096 hold"),
    Case((*LLM, "--heads", "32", "--micro-batch", "1000000", "--seq-len", "10000000"), 2,
         "is 1e+13 tokens a GPU a step"),
    Case(("memory", "--workload", "mlp", "--params", "7e9"), 2,
         "--workload mlp and --params contradict"),
    Case((*LLM, "--heads", "32", "-b", "4"), 2, "an LLM (--params ...) and --batch-size"),
    Case((*LLM, "--heads", "32", "--json"), 0, '"verdict"'),  # the shape that is fine
    # user catalog files
    Case(("prices", "--catalog", "{tmp}/p.csv"), 2,
         "line 2, column 'observed_on': 2099-01-05 is in the future",
         files={"p.csv": FUTURE_PRICE}),
    Case(("cost", "--gpu-hours", "10", "--catalog", "{tmp}/p.csv"), 2,
         "line 2, column 'retrieved_on': 2099-01-01 is in the future",
         files={"p.csv": FUTURE_RETRIEVED}),
    Case(("prices", "--catalog", "{tmp}/p.csv"), 2,
         "lines 2 and 3 both give the on_demand price of rtx-4090 at acme",
         files={"p.csv": DUPLICATE_PRICE}),
    Case(("specs", "--catalog", "{tmp}/g.csv"), 2, "lines 2 and 3 both give GPU id 'my-3090'",
         files={"g.csv": DUPLICATE_GPU}),
]  # fmt: skip


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)
