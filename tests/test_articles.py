"""Who "the articles" are is said in one module, and their constants are taken from it."""

from __future__ import annotations

import re
from pathlib import Path

from gpuscout.advise.checklist import QUESTIONS
from gpuscout.core import articles
from gpuscout.workloads import WORKLOADS

SRC = Path(articles.__file__).parent


def test_three_articles_each_with_a_title_and_what_it_claims() -> None:
    assert [a.key for a in articles.ARTICLES] == ["000", "001", "002"]
    for a in articles.ARTICLES:
        assert a.title_en and a.summary and a.claims
        assert a.cite().startswith(f"article {a.key}, ")
    assert len(articles.sources()) == 3 and "cost table" in articles.sources()[1]
    # the errors they make are named too, never repeated as facts
    assert any("19.5 TFLOPS" in e for e in articles.BY_KEY["001"].errors)


def test_the_constants_are_used_not_restated() -> None:
    assert QUESTIONS is articles.CHECKLIST_QUESTIONS
    mlp = WORKLOADS["mlp"].dims
    assert (mlp["inputs"], mlp["hidden"], mlp["classes"]) == (780, 128, 10)
    assert mlp["inputs"] == articles.SEED_MLP_INPUTS
    # No other source file restates a checklist question, the seed MLP's 780 inputs or a title.
    pattern = re.compile(
        r"larger than 10B parameters\?|Input\(780\)|\"inputs\": 780|性能对比测试|消费级与专业级"
    )
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "articles.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_default_jobs_are_epochs_with_a_reason() -> None:
    assert WORKLOADS["mlp"].default_epochs == 20 and "MNIST" in WORKLOADS["mlp"].default_epochs_why
    assert WORKLOADS["resnet50"].default_epochs == 90
    for w in WORKLOADS.values():
        assert w.default_epochs > 0 and w.default_epochs_why
