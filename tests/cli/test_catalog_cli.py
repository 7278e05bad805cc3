"""``specs``, ``prices`` and ``audit`` from the command line, with TensorFlow blocked."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import assert_user_errors, run_cli

EXAMPLES = Path(__file__).parents[2] / "examples" / "article_claims.csv"


def test_specs_side_by_side() -> None:
    r = run_cli("specs", "3090", "4090", "a100-40gb", "a100-80gb", "h100-sxm", block_tf=True)
    assert r.code == 0, r.err
    for gpu in ("rtx-3090", "rtx-4090", "a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm"):
        assert gpu in r.out
    assert "ridge FP16/BF16" in r.out and "[5] h100-sxm:" in r.out
    assert "assumption: 'a100-40gb' taken as A100 40GB SXM4" in r.out


def test_specs_json_carries_values_with_sources() -> None:
    r = run_cli("specs", "a100-40gb", "--json", block_tf=True)
    assert r.code == 0, r.err
    gpu = r.json()["gpus"][0]
    assert gpu["fp32_tflops"] == 19.5
    assert "nvidia-a100-datasheet" in gpu["source"]
    assert gpu["derived"]["ridge_flop_per_byte"]["fp16_bf16"] == 200.6


def test_specs_filters() -> None:
    r = run_cli("specs", "--feature", "mig", "--min-memory", "80", "--json", block_tf=True)
    ids = {g["id"] for g in r.json()["gpus"]}
    assert ids == {
        "a100-80gb-sxm",
        "a100-80gb-pcie",
        "h100-sxm",
        "h100-pcie",
        "h100-nvl",
        "h200",
        "gh200",
        "b200",
        "rtx-pro-6000-blackwell",  # MIG up to 4 on the workstation Blackwell
    }
    r = run_cli("specs", "--arch", "ada", "--market", "consumer", "--json", block_tf=True)
    assert [g["id"] for g in r.json()["gpus"]] == ["rtx-4090", "rtx-4080", "rtx-4080-super"]
    r = run_cli("specs", "--market", "consumer", "--sort", "training", "--json", block_tf=True)
    assert [g["id"] for g in r.json()["gpus"]] == [
        "rtx-5090",
        "rtx-4090",
        "rtx-5080",
        "rtx-4080-super",
        "rtx-4080",
        "rtx-3090-ti",
        "rtx-3090",
    ]


def test_prices() -> None:
    r = run_cli("prices", "h100", "--provider", "aws", "--json", block_tf=True)
    assert r.code == 0, r.err
    assert [(p["instance_type"], p["usd_per_gpu_hour"]) for p in r.json()] == [
        ("p5.48xlarge", 6.88)
    ]


def test_audit_prints_a_verdict_for_each_article_row() -> None:
    r = run_cli("audit", "--file", str(EXAMPLES), block_tf=True)
    assert r.code == 0, r.err
    assert r.out.count("impossible") >= 4 and "implausible" in r.out
    assert "RTX 3090: ResNet-50 ImageNet epoch 87 s" in r.out and "14,726" in r.out
    assert "likely confusion" in r.out


def test_audit_single_claims_and_json() -> None:
    r = run_cli(
        "audit", "--gpu", "a100-40gb", "--workload", "resnet50", "--precision",
        "mixed_float16", "--epoch-seconds", "49", "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    (v,) = r.json()["verdicts"]
    assert v["verdict"] == "impossible" and v["numbers"]["peak_tflops"] == 312
    r = run_cli("audit", "--gpu", "a100-40gb", "--spec", "fp32_tflops=9.7", block_tf=True)
    assert r.code == 0 and "contradicted" in r.out and "FP64 (9.7)" in r.out


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "gpus.csv"
    bad.write_text("id,fp32_tflops\nx,1\n")
    cases = [
        (("specs", "a100"), "is ambiguous"),
        (("specs", "rtx 4900"), "Did you mean 'rtx-4090'"),
        (("specs", "--feature", "nvlnk"), "Did you mean 'nvlink'"),
        (("specs", "--catalog", str(bad)), "missing column"),
        (("audit",), "nothing to audit"),
        (("audit", "--workload", "resnet50", "--epoch-seconds", "9"), "needs the GPU"),
        (("audit", "--gpu", "t4", "--spec", "fp32"), "is not FIELD=VALUE"),
        (("audit", "--gpu", "t4", "--epoch-seconds", "-3"), "must be above 0.001"),
    ]
    assert_user_errors(cases)


def test_specs_csv_is_a_catalog_to_edit(tmp_path: Path) -> None:
    r = run_cli("specs", "4090", "--csv", block_tf=True)
    assert r.code == 0, r.err
    mine = tmp_path / "mine.csv"
    mine.write_text(r.out.replace(",82.6,82.6,", ",80.0,82.6,"))  # my measured FP32
    r = run_cli("specs", "4090", "--json", "--catalog", str(mine), block_tf=True)
    (gpu,) = r.json()["gpus"]
    assert gpu["fp32_tflops"] == 80.0 and gpu["catalog_origin"] == str(mine)
    r = run_cli("specs", "4090", "--catalog", str(mine), block_tf=True)
    assert f"(from your catalog {mine})" in r.out
