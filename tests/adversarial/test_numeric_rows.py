"""Issue 17: impossible numbers, texts that name what does not exist, silent wrong targets.

Each row is a command and its bad (or extreme but allowed) input, the exit code and what it
must say. Beyond the table's own checks, every option a row's message names must exist on
that command (or on a command the message names: "run 'bench --scaling'").
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gpuscout.cli import build_parser
from tests.adversarial.table import Case, cases, run_case

A100 = ("--gpu", "a100-40gb")
RESNET = (*A100, "--workload", "resnet50")

CASES = [
    # Infinity passes where NaN is refused: every numeric option has a finite range.
    Case(("audit", *RESNET, "--epoch-seconds", "inf"), 2, "must be a finite number"),
    Case(("audit", *RESNET, "--epoch-seconds", "1e-300", "--json"), 2,
         "must be above 0.001 and at most 1e+09, got 1e-300"),
    Case(("audit", *RESNET, "--samples-per-second", "1e400"), 2, "must be a finite number"),
    Case(("cost", "--gpu-hours", "inf"), 2, "must be a finite number"),
    Case(("cost", "--gpu-hours", "1e308"), 2, "must be above 0 and at most 1e+09, got 1e308"),
    Case(("cost", "--samples", "1e400", "--workload", "mlp"), 2, "must be a finite number"),
    Case(("specs", "--min-memory", "inf"), 2, "must be a finite number"),
    Case(("specs", "--min-memory", "1e5"), 2, "must be at least 0 and at most 10000, got 1e5"),
    Case(("predict", "--workload", "mlp", "--network", "inf"), 2, "must be a finite number"),
    Case(("predict", "--workload", "mlp", "--network", "1e-300"), 2,
         "must be above 0.001 and at most 100000"),
    Case(("memory", "--params", "inf"), 2, "must be a finite number"),
    Case(("memory", "--params", "1e14"), 2, "must be above 0 and at most 1e+13, got 1e14"),
    Case(("bench", "--seconds", "inf"), 2, "must be a finite number"),
    Case(("bench", "--seconds", "1e6"), 2, "must be above 0 and at most 604800, got 1e6"),
    Case(("doctor", "--seconds", "1e308"), 2, "at most 604800"),
    Case(("soak", "--minutes", "1e308"), 2, "at most 10080"),
    Case(("soak", "--max-drift", "1"), 2, "must be above 0 and below 1, got 1"),
    Case(("cost", "--gpu-hours", "10", "--delay-usd-per-day", "inf"), 2, "must be a finite"),
    Case(("cost", "--gpu-hours", "10", "--delay-usd-per-day", "-5"), 2,
         "must be at least 0 and at most 1e+09, got -5"),
    Case(("cost", "--gpu-hours", "10", "--failures-datacenter", "nan"), 2, "must be a finite"),
    Case(("cost", "--gpu-hours", "10", "--power-utilization", "1.5"), 2,
         "must be above 0 and at most 1, got 1.5"),
    Case(("cost", "--gpu-hours", "10", "--usd-per-kwh", "1e308"), 2, "at most 100"),
    Case(("advise", "--workload", "mlp", "--budget", "inf"), 2, "must be a finite number"),
    Case(("advise", "--workload", "mlp", "--deadline", "9" * 400 + "h"), 2,
         "at most 87600 hours"),
    Case(("advise", "--workload", "mlp", "--deadline", "0d"), 2, "must be above 0"),
    Case(("bench", "--batch-size", "9" * 30), 2, "at most 2,147,483,647"),
    Case(("bench", "--mode", "inference", "--concurrency", "1,100000"), 2,
         "at most 4,096, got 100000 (in '1,100000')"),
    Case(("bench", "--mode", "inference", "--batch-sizes", "1,inf"), 2,
         "'inf' is not a whole number"),
    Case(("runs", "show", "99999999999999999999"), 2, "at most 9,223,372,036,854,775,807"),
    Case(("report", "--runs", "1,99999999999999999999", "--html", "{tmp}/r.html"), 2,
         "at most 9,223,372,036,854,775,807"),
    Case(("predict", "--workload", "mlp", "--from-run", "1e3"), 2, "'1e3' is not a whole number"),
    Case(("launch", "--workers", "1e9", "--", "bench"), 2, "'1e9' is not a whole number"),
    # Numbers inside text options (GPU=X, W=SECONDS, counts) have ranges too.
    Case(("cost", "--gpu-hours", "10", "--speedup", "rtx-4090=inf"), 2,
         "the value in 'rtx-4090=inf': must be a finite number"),
    Case(("cost", "--gpu-hours", "10", "--purchase", "rtx-4090=1e308"), 2, "at most 1e+09"),
    Case(("cost", "--gpu-hours", "10", "--scaling", "8=1.5"), 2, "at most 1, got 1.5"),
    Case(("cost", "--gpu-hours", "10", "--option", "rtx-4090x1000000000"), 2,
         "the GPU count in 'rtx-4090x1000000000' must be a whole number"),
    Case(("cost", "--gpu-hours", "10", "--option", "rtx-4090=" + "9" * 400), 2,
         "must be a finite number"),
    Case(("advise", "--workload", "mlp", "--epochs", "3", "--counts", "1," + "9" * 20), 2,
         "at most 100,000"),
    Case(("bench", "--scaling", "1,99999999999"), 2, "at most 1,024, got 99999999999"),
    Case(("bench", "--devices", "99999999999"), 2, "a device count must be a whole number"),
    Case(("scout", "--measure", "mlp=inf"), 2, "the value in 'mlp=inf': must be a finite"),
    Case(("scout", "--measure", "mlp=15,resnet50=1e308"), 2, "at most 604800, got 1e308"),
    # Texts that name what does not exist.
    Case(("audit", *A100, "--workload", "nosuch", "--epoch-seconds", "100"), 2,
         "use one of: resnet50"),
    Case(("cost", "--gpu-hours", "10", "--failures-consumer", "-1"), 2,
         "argument --failures-consumer: must be at least 0 and at most 1000, got -1"),
    Case(("advise", "--workload", "nosuch", "--epochs", "3"), 2, "unknown workload 'nosuch'"),
    Case(("memory", "--workload", "nosuch"), 2, "unknown workload 'nosuch'"),
    Case(("cost", "--workload", "nosuch", "--epochs", "3"), 2, "unknown workload 'nosuch'"),
    Case(("predict", "--workload", "nosuch"), 2, "or --model FILE.py:FUNCTION"),
    Case(("bench", "--help"), 0, "a 95% confidence interval"),
    Case(("report", "--answers", "yes", "--html", "{tmp}/r.html"), 2,
         "got 1 ('yes'). To fix"),
    Case(("audit", *A100, "--spec", "fp32=-19.5"), 2,
         "the value must be a positive, finite number, got -19.5"),
    Case(("audit", *A100, "--spec", "fp32_tflops=" + "9" * 400), 2, "positive, finite number"),
    Case(("predict", "--workload", "mlp", "--gpus", ""), 2, "'' names no GPU"),
    Case(("predict", "--workload", "mlp", "--gpus", " , "), 2, "names no GPU"),
    Case(("predict", "--workload", "mlp", "--count", "1000000"), 2,
         "GPUs in one machine must be a whole number at least 1 and at most 72, got 1000000"),
    Case(("predict", "--workload", "mlp", "--count", "1000000x8"), 2,
         "machines in '1000000x8' must be a whole number at least 1 and at most 100,000"),
    # Silent wrong targets: refused before anything is measured.
    Case(("bench", "--model", "", "--steps", "3"), 2, "the model is empty"),
    Case(("bench", "--model", "  "), 2, "the model is empty"),
    Case(("doctor", "--model", ""), 2, "the model is empty"),
    Case(("soak", "--model", ""), 2, "the model is empty"),
    Case(("predict", "--model", ""), 2, "the model is empty"),
    Case(("bench", "--seed", "-1"), 2,
         "must be a whole number at least 0 and at most 4,294,967,295"),
    Case(("bench", "--seed", str(2**32)), 2, "at most 4,294,967,295, got 4294967296"),
    Case(("doctor", "--seed", "-1"), 2, "at least 0"),
    # Extreme but allowed: the answer is strict JSON (the table parses it so), no Infinity.
    Case(("audit", *RESNET, "--epoch-seconds", "0.0011", "--json"), 0, '"verdict"'),
    Case(("audit", *RESNET, "--epoch-seconds", "1e9", "--json"), 0, '"verdict"'),
    Case(("audit", *RESNET, "--samples-per-second", "1e12", "--json"), 0, '"verdict"'),
    Case(("audit", *RESNET, "--samples-per-second", "0.000002", "--epoch-samples",
          "1000000000000000", "--json"), 0, '"verdict"'),
    Case(("cost", "--gpu-hours", "1e9", "--delay-usd-per-day", "1e9", "--failures-consumer",
          "1000", "--checkpoint-hours", "0", "--restart-minutes", "0", "--json"), 0,
         '"options"'),
    Case(("specs", "--min-memory", "0", "--json"), 0, '"name"'),
    Case(("specs", "--min-memory", "10000", "--json"), 0, "[]"),
    Case(("memory", "--params", "1e13", "--layers", "128", "--hidden", "16384", "--heads",
          "128", "--json"), 0, "{"),
    Case(("predict", "--workload", "mlp", "--network", "0.0011", "--count", "100000x8",
          "--json"), 0, '"samples_per_second"'),
    # 72 cards in one machine: more than a server holds
    Case(("predict", "--workload", "mlp", "--count", "100000x72"), 2, "--count 900000x8"),
]  # fmt: skip

TOKEN = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _options_by_command() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    root = build_parser()
    top = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in top.choices.items():
        found = {"--help"}
        stack = [sub]
        while stack:
            parser = stack.pop()
            for action in parser._actions:
                found.update(action.option_strings)
                if isinstance(action, argparse._SubParsersAction):
                    stack.extend(action.choices.values())
        out[name] = found
    return out


BY_COMMAND = _options_by_command()


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_case(case, tmp_path, monkeypatch)
    text = outcome.err if case.code else outcome.out
    command = case.args[0]
    named = {c for c in BY_COMMAND if re.search(rf"\b{c}\b", text)} - {command}
    allowed = BY_COMMAND[command].union(*(BY_COMMAND[c] for c in named))
    wrong = set(TOKEN.findall(text)) - allowed
    assert not wrong, f"gpuscout {' '.join(case.args)} names {wrong}, which it does not have"
    assert "%%" not in text and ".." not in text.replace("...", ""), text


def test_texts_that_named_missing_options_no_longer_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact texts issue 17 found; the per-row check above would catch them too."""
    audit = run_case(
        Case(("audit", *A100, "--workload", "nosuch", "--epoch-seconds", "9"), 2, "nosuch"),
        tmp_path,
        monkeypatch,
    )
    assert "--flops-per-sample" not in audit.err
    advise = run_case(
        Case(("advise", "--workload", "nosuch", "--epochs", "3"), 2, "nosuch"),
        tmp_path,
        monkeypatch,
    )
    assert "--model" not in advise.err
    cost = run_case(
        Case(("cost", "--gpu-hours", "9", "--failures-consumer", "-1"), 2, "-1"),
        tmp_path,
        monkeypatch,
    )
    assert "--failures-per-1000" not in cost.err
    for args in (("--gpus", ""), ("--count", "1000000")):
        predict = run_case(
            Case(("predict", "--workload", "mlp", *args), 2, args[0]), tmp_path, monkeypatch
        )
        assert "--batch-size" not in predict.err
