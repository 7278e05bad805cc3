"""``gpuscout audit --claim``, as a user runs it: real processes, TensorFlow blocked (audit
does not measure), the same ratio as ``gpuscout predict`` for the same setting, and one-line
refusals."""

from __future__ import annotations

import argparse

import pytest

from gpuscout.cli import build_parser
from tests.conftest import assert_user_errors, run_cli

CLAIM = ("audit", "--claim", "rtx-4090=1.4\u00d7 a100-40gb", "--workload", "resnet50")


def test_the_claim_is_judged_per_setting_without_tensorflow() -> None:
    r = run_cli(*CLAIM, block_tf=True)
    assert r.code == 0, r.err
    out = " ".join(r.out.split())  # the table wraps
    for setting in ("fp32 with TF32", "fp32 without TF32", "mixed_float16", "mixed_bfloat16"):
        assert setting in out
    assert "relative claim: GeForce RTX 4090 = 1.4x A100 40GB SXM4, resnet50" in out
    assert "overall:" in out and "closest prediction:" in out
    assert "chip-relative band" in out  # which band the range is
    assert "assumption: 'a100-40gb' taken as A100 40GB SXM4" in out
    assert "source: GeForce RTX 4090" in out


@pytest.mark.parametrize(("precision", "tf32"), [("fp32", False), ("mixed_float16", True)])
def test_audit_and_predict_give_the_same_ratio(precision: str, tf32: bool) -> None:
    audited = run_cli(*CLAIM, "--json")
    assert audited.code == 0, audited.err
    (verdict,) = audited.json()["verdicts"]
    assert verdict["kind"] == "relative" and verdict["claimed_ratio"] == 1.4
    (judged,) = [s for s in verdict["settings"] if (s["precision"], s["tf32"]) == (precision, tf32)]
    predicted = run_cli(
        "predict", "--workload", "resnet50", "--gpus", "rtx-4090,a100-40gb",
        "--precision", precision, "--tf32" if tf32 else "--no-tf32", "--json",
    )  # fmt: skip
    assert predicted.code == 0, predicted.err
    speed = {row["gpu"]: row["samples_per_second"] for row in predicted.json()}
    assert judged["ratio"] == pytest.approx(speed["rtx-4090"] / speed["a100-40gb-sxm"], rel=1e-9)
    assert judged["samples_per_second"] == pytest.approx(speed, rel=1e-9)
    low, high = judged["low"], judged["high"]
    assert judged["verdict"] == ("holds within range" if low <= 1.4 <= high else "outside range")


def test_batch_size_and_seq_len_are_taken() -> None:
    r = run_cli(
        "audit", "--claim", "h100-sxm=2 a100-80gb-sxm", "--workload", "bert-base",
        "--seq-len", "384", "-b", "16", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    (verdict,) = r.json()["verdicts"]
    assert verdict["batch_size"] == 16 and "sequence length 384" in verdict["assumptions"]
    assert all("batch 16 per GPU" in " ".join(s["notes"] + verdict["assumptions"])
               for s in verdict["settings"])  # fmt: skip


def test_bad_claims_are_refused_in_one_line() -> None:
    w = ("--workload", "resnet50")
    assert_user_errors(
        [
            (("audit", "--claim", "rtx-4090=fast", *w), "cannot read the claim 'rtx-4090=fast'"),
            (("audit", "--claim", "rtx-4909=1.4x a100-40gb", *w), "unknown GPU 'rtx-4909'"),
            (("audit", "--claim", "rtx-4090=1.4x a100", *w), "'a100' is ambiguous"),
            (("audit", "--claim", "rtx-4090=0x a100-40gb", *w), "gives the ratio 0:"),
            (("audit", "--claim", "rtx-4090=-2x a100-40gb", *w), "gives the ratio -2:"),
            (("audit", "--claim", "rtx-4090=infx a100-40gb", *w), "gives the ratio inf:"),
            (("audit", "--claim", "rtx-4090=1.4x rtx-4090", *w), "with itself"),
            (("audit", "--claim", "rtx-4090=1.4x a100-40gb"), "needs --workload"),
            (
                ("audit", "--claim", "rtx-4090=1.4x t4", "--workload", "resnet101"),
                "unknown workload",
            ),
            (
                ("audit", "--claim", "rtx-4090=1.4x a100-40gb", *w, "--seq-len", "128"),
                "has no sequence length",
            ),
            (
                ("audit", "--claim", "rtx-4090=1.4x a100-40gb", *w, "--gpu", "t4"),
                "--gpu is not part of a relative claim",
            ),
            (
                ("audit", "--claim", "rtx-4090=1.4x a100-40gb", *w, "--precision", "fp32"),
                "--precision is not part of a relative claim",
            ),
            (
                ("audit", "--gpu", "t4", *w, "--epoch-seconds", "900", "-b", "64"),
                "--batch-size is for relative claims only",
            ),
        ]
    )


def _audit_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = sub.choices["audit"]
    assert isinstance(found, argparse.ArgumentParser)
    return found


def test_audit_has_a_description_and_every_option_a_help() -> None:
    audit = _audit_parser()
    assert audit.description and "--claim" in audit.description
    bare = [a.dest for a in audit._actions if not (a.help and a.help.strip())]
    assert not bare, bare
