"""A fine-tuning job through the commands that price and advise (issue 33, item 6): ``cost``,
``advise`` and ``report`` take a decoder LLM's sequence, LoRA and checkpointing as ``predict``
does, and give the same number; ``--job llm-lora-8b`` names the articles' job in one word.
Shipped profiles only (llama-3.1-8b, LoRA rank 64, checkpointed, bfloat16): nothing traced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_in_process

LORA = ("--workload", "llama-3.1-8b", "--mode", "lora", "--checkpointing",
        "--precision", "mixed_bfloat16")  # fmt: skip


def test_cost_prices_the_lora_job_at_predicts_speed_with_tokens_and_energy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same question gets the same number: cost's 1-GPU RTX 4090 rate is predict's for
    the same step, its notes give tokens/s (2,048 a sequence), and the job is priced with its
    energy. Owning a used RTX 4090 prints a break-even against renting."""
    monkeypatch.setenv("GPUSCOUT_DB", str(tmp_path / "r.db"))
    p = run_in_process("predict", *LORA, "--gpus", "rtx-4090", "--json")
    assert p.code == 0, p.err
    predicted = json.loads(p.out)[0]
    assert predicted["tokens_per_second"] == pytest.approx(predicted["samples_per_second"] * 2048)
    c = run_in_process("cost", *LORA, "--epochs", "3", "--option", "4090@used", "--json")
    assert c.code == 0, c.err
    body = json.loads(c.out)
    rented = next(o for o in body["options"] if o["gpu"] == "rtx-4090" and o["count"] == 1
                  and o["provider"] != "used")  # fmt: skip
    rate = float(rented["notes"][0].split()[1])
    assert rate == pytest.approx(predicted["samples_per_second"], rel=0.005)
    tokens = f"({predicted['tokens_per_second']:,.0f}"[:3]
    assert tokens in rented["notes"][0] and "tokens/s)" in rented["notes"][0]
    assert rented["energy_kwh"] > 0
    assert any(o.get("break_even") for o in body["options"])
    # without checkpointing the step (31.7 GB) does not fit a 24 GB card: not priced, said
    big = run_in_process("cost", *[a for a in LORA if a != "--checkpointing"], "--epochs", "3",
                         "--option", "4090", "--option", "a100-80gb-sxm", "--json")  # fmt: skip
    assert big.code == 0, big.err
    rows = {o["gpu"]: o for o in json.loads(big.out)["options"]}
    assert rows["rtx-4090"]["unpriced"].startswith("does not fit: the step needs 31.")
    assert rows["a100-80gb-sxm"]["unpriced"] is None
    # the job as tokens: a billion tokens are 488,282 whole sequences of 2,048
    t = run_in_process("cost", *LORA, "--tokens", "1e9", "--json")
    assert t.code == 0, t.err
    assert "1,000,000,000 tokens (488,282 sequences of 2,048)" in json.dumps(json.loads(t.out))


def test_report_job_llm_lora_8b_names_the_job_and_charts_time_against_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report --job llm-lora-8b``: Llama-3.1-8B, LoRA rank 64, checkpointed, 2,048 tokens,
    3 epochs of Alpaca, advised with the time-vs-cost chart, without measuring anything."""
    from gpuscout.store import Store
    from tests.report.runs import report_runs

    monkeypatch.setenv("GPUSCOUT_DB", str(tmp_path / "r.db"))
    with Store(tmp_path / "r.db") as store:  # planted runs: the report's other sections
        store.save_many(report_runs())
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    r = run_in_process("report", "--job", "llm-lora-8b", "--html", str(html), "--md", str(md))
    assert r.code == 0, r.err
    text = md.read_text()
    assert "3 epochs x 52,002 sequences of llama-3.1-8b" in text
    assert "LoRA rank 64, base frozen · gradient checkpointing" in text
    page = html.read_text()
    assert '<h2 id="cost">Time vs cost</h2>' in page and "<svg" in page
    # sized in tokens (no epochs assumed beside them), and --mode train undoes the job's LoRA
    for extra, says in (
        (("--tokens", "1e9"), "1,000,000,000 tokens"),
        (("--mode", "train"), "every weight trained · gradient checkpointing"),
    ):
        r = run_in_process("report", "--job", "llm-lora-8b", *extra, "--md", str(md))
        assert r.code == 0, r.err
        assert says in md.read_text()
    unnamed = run_in_process("report", "--mode", "lora", "--md", str(md))  # the assumed job
    assert (
        unnamed.code == 2
        and "--mode lora adds adapters to a decoder LLM workload, and none was named" in unnamed.err
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("cost", "--workload", "resnet50", "--mode", "lora", "--epochs", "1"),
         "--mode lora: workload 'resnet50' has no LoRA adapters"),
        (("cost", "--workload", "bert-base", "--checkpointing", "--epochs", "1"),
         "--checkpointing recomputes the blocks of the decoder LLM workloads"),
        (("cost", "--model", "m.py:build", "--seq-len", "512", "--samples", "10"),
         "--seq-len set a built-in workload's shape, not your model's"),
        (("advise", "--workload", "llama-2-7b", "--seq-len", "8192", "--epochs", "1"),
         "llama-2-7b takes seq_len up to 4,096"),
        (("predict", "--workload", "llama-tiny", "--mode", "inference", "--checkpointing"),
         "--checkpointing recomputes activations for a backward pass"),
        (("predict", "--workload", "llama-tiny", "--mode", "inference", "--op-by-op"),
         "--op-by-op counts a training step run eagerly"),
        (("predict", "--workload", "resnet50", "--op-by-op", "--gpus", "rtx-4090"),
         "--op-by-op: the profile of resnet50"),
        (("cost", "--workload", "resnet50", "--tokens", "1e9"),
         "--tokens: resnet50 is not a language model"),
        (("cost", "--workload", "llama-3.1-8b", "--tokens", "1e9", "--epochs", "2"),
         "--tokens and --epochs contradict each other"),
    ],
)  # fmt: skip
def test_llm_job_options_that_do_not_apply_are_refused(
    args: tuple[str, ...], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_DB", str(tmp_path / "r.db"))
    (tmp_path / "m.py").write_text("def build():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    r = run_in_process(*args)
    assert r.code == 2 and says in r.err, r.err
    assert "Traceback" not in r.err


def test_memory_of_a_decoder_workload_is_predicts_traced_step() -> None:
    """``memory --workload llama-3.1-8b --mode lora --checkpointing``: the traced step's parts,
    the frozen base apart, summing to what predict compares with the GPU's memory."""
    args = ("--workload", "llama-3.1-8b", "--mode", "lora", "--checkpointing", "--precision",
            "mixed_bfloat16")  # fmt: skip
    m = run_in_process("memory", *args, "--gpu", "rtx-4090", "--json")
    p = run_in_process("predict", *args, "--gpus", "rtx-4090", "--json")
    assert m.code == 0 and p.code == 0, m.err + p.err
    memory, predicted = json.loads(m.out), json.loads(p.out)[0]
    parts = memory["breakdown_gb"]
    assert parts["frozen weights"] == pytest.approx(16.06, abs=0.01)  # 8.03 B in bfloat16
    assert sum(parts.values()) == pytest.approx(predicted["memory_needed_gb"], abs=0.05)
    refused = run_in_process("memory", "--workload", "llama-3.1-8b", "--mode", "qlora")
    assert refused.code == 2 and "--mode qlora: the step is traced" in refused.err
    shape = run_in_process("memory", "--workload", "llama-2-7b", "--layers", "4")
    assert shape.code == 2 and "--workload llama-2-7b and --layers contradict" in shape.err


def test_scout_measures_the_decoders_own_code_for_an_llm_job() -> None:
    """For a decoder LLM job scout measures llama-tiny here (20 s of the job's own Keras code)
    rather than ResNet-50 and the MLP, which say nothing about it; other jobs keep the
    articles' workloads, and your model is measured itself."""
    from gpuscout.cli.scout import DEFAULT_MEASURE, LLM_MEASURE, default_measure
    from gpuscout.predict.job import JobSpec

    assert default_measure(JobSpec(workload="llama-3.1-8b")) == LLM_MEASURE == "llama-tiny=20"
    assert default_measure(JobSpec(workload="resnet50")) == DEFAULT_MEASURE
    assert default_measure(JobSpec()) == DEFAULT_MEASURE
    assert default_measure(JobSpec(model="m.py:build")) is None
