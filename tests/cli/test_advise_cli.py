"""``gpuscout advise`` and ``gpuscout memory`` from the command line, TensorFlow blocked."""

from __future__ import annotations

from tests.conftest import assert_user_errors, run_cli


def test_quick_answers_like_the_articles_and_adds_what_it_missed() -> None:
    r = run_cli("advise", "--quick", "--answers", "yes,yes,yes,no", "--json", block_tf=True)
    assert r.code == 0, r.err
    out = r.json()
    assert out["yes_count"] == 3 and out["recommendation"].startswith("A100/H100")
    r = run_cli("advise", "--quick", "--answers", "no,yes,no,no", block_tf=True)
    assert "-> RTX 4090" in r.out and "what the rule does not ask" in r.out and "memory" in r.out


def test_full_recommendation() -> None:
    r = run_cli(
        "advise", "--workload", "resnet50", "--epochs", "90", "--deadline", "48h",
        "--budget", "2000", "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    out = r.json()
    assert len(out["ranked"]) == 5 and out["pareto"]
    assert all(c["hours"] <= 48 and c["total_usd"] <= 2000 for c in out["ranked"])
    assert all(c["reasons"] for c in out["ranked"])
    r = run_cli("advise", "--workload", "resnet50", "--epochs", "90", "--preset", "large-model",
                "--json", block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    assert {c["gpu"] for c in r.json()["ranked"]} <= {
        "a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm", "h200", "b200", "a100-40gb-pcie",
        "a100-80gb-pcie", "h100-pcie", "v100-sxm2-16gb", "v100-sxm2-32gb",
    }  # fmt: skip


def test_memory_cases() -> None:
    r = run_cli(
        "memory", "--params", "7e9", "--layers", "32", "--hidden", "4096", "--heads", "32",
        "--seq-len", "512", "--mode", "lora", "--gpu", "4090", "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.json()["gpus"][0]["verdict"] == "fits"
    r = run_cli(
        "memory", "--params", "13e9", "--layers", "40", "--hidden", "5120", "--heads", "40",
        "--gpu", "h100", "--checkpointing", "--json", block_tf=True,
    )  # fmt: skip
    assert r.json()["gpus"][0]["verdict"] != "fits"
    r = run_cli("memory", "--workload", "resnet50", "--gpu", "t4", block_tf=True)
    assert r.code == 0 and "from the compiled step" in r.out


def test_bad_input() -> None:
    cases = [
        (("advise",), "say what to advise on"),
        (("advise", "--quick", "--answers", "yes"), "needs 4 answers"),
        (("advise", "--quick"), "no answers given"),
        (("advise", "--workload", "resnet50", "--epochs", "1", "--budget", "0"), "budget"),
        (("advise", "--workload", "resnet50", "--epochs", "1", "--provider", "ibm"), "'ibm'"),
        (("advise", "--workload", "resnet50", "--epochs", "1", "--deadline", "soon"), "duration"),
        (("memory", "--params", "7e9"), "needs --layers"),
    ]
    assert_user_errors(cases)


def test_a_budget_is_money_paid() -> None:
    """Issue 30: an owned option's budget is its purchase up front, not its amortised cost
    per job; a rented one's is its rental for the job; the words say which limited."""
    r = run_cli(
        "advise", "--workload", "resnet50", "--epochs", "90", "--budget", "2000", "--owned",
        "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    out = r.json()
    assert out["budget"]["usd"] == 2000
    owned = [c for c in out["ranked"] if c["provider"] == "owned"]
    assert owned and all(
        c["paid_basis"] == "up-front" and c["upfront_usd"] == c["paid_usd"] <= 2000
        and c["total_usd"] < c["upfront_usd"] for c in owned
    )  # fmt: skip
    assert all(c["paid_basis"] == "rental" and c["rental_usd"] <= 2000
               for c in out["ranked"] if c["provider"] != "owned")  # fmt: skip
    assert out["rejected"]["over budget: the up-front purchase > $2,000"] > 0
    r = run_cli("advise", "--workload", "resnet50", "--epochs", "90", "--budget", "2000",
                "--owned", block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    assert "≤ budget $2,000" in r.out and "up-front purchase > $2,000" in r.out
    assert "within the $2,000 budget" not in r.out
    assert_user_errors([(
        ("advise", "--workload", "resnet50", "--epochs", "90", "--budget", "1", "--owned"),
        "over budget: the up-front purchase > $1",
    )])  # fmt: skip
