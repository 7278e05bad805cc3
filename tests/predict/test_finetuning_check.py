"""The decoder prediction against published fine-tuning throughput (issue 33, item 3): the rows
are sourced and read as stated, the ones gpuscout cannot predict are named with why, and the
error ``predict`` reports is what the shipped profiles give today."""

from __future__ import annotations

import math

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.predict import profile_trace
from gpuscout.predict.finetuning_check import check, range_note, shipped, summarize
from gpuscout.predict.finetuning_rows import excluded, implied_tflops, load_rows


def test_rows_are_sourced() -> None:
    """Each row names its repository at a commit and a file (the reserved external test's
    sources are not among them: ``test_no_shipped_data_file_names_a_reserved_source``)."""
    rows = load_rows()
    assert len(rows) == 17
    assert all("@" in r.source and r.throughput > 0 for r in rows)
    # what a source leaves unstated is read from a named config, and said
    torchtune = [r for r in rows if r.source_id == "torchtune-readme" and r.mode == "lora"]
    assert all(r.lora_rank == 8 and r.checkpointing for r in torchtune)
    assert all("8B_lora_single_device.yaml" in r.assumed for r in torchtune)
    # how each row's software runs the elementwise ops, and where that was read: fsdp_qlora's
    # train.py runs Hugging Face's model eagerly (no torch.compile); torchtune compiles
    for r in rows:
        eager = r.source_id == "answerai-fsdp-qlora"
        assert r.kernels == ("op-by-op" if eager else "fused"), r.label
        assert ("calls no torch.compile" if eager else "kernels fused") in r.assumed


def test_rows_gpuscout_cannot_predict_are_named_with_why() -> None:
    """FP8 is not a precision it predicts; Llama-2 past its 4,096-token context is refused;
    torchtune's "A6000" rows would need more than the RTX A6000's dense BF16 peak (154.8
    TFLOP/s) for the linear layers alone, with the checkpointing its recipe turns on."""
    catalog = load_catalog()
    why = {r.label: excluded(r, catalog) for r in load_rows()}
    left = {label: reason for label, reason in why.items() if reason}
    assert len(left) == 6, left
    assert sum("fp8 is not a precision" in w for w in left.values()) == 2
    assert sum("beyond llama-2-7b's 4,096-token context" in w for w in left.values()) == 2
    a6000 = [r for r in load_rows() if r.gpu_id == "rtx-a6000"]
    assert all("above the rtx-a6000's 154.8 dense peak" in (why[r.label] or "") for r in a6000)
    assert all(implied_tflops(r) > 154.8 for r in a6000)
    rtx4090 = [r for r in load_rows() if r.gpu_id == "rtx-4090" and r.source_id.startswith("torch")]
    assert all(why[r.label] is None and implied_tflops(r) < 165.2 for r in rtx4090)


def test_the_stored_error_is_what_the_shipped_profiles_give(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every predictable row from a shipped profile (tracing one is refused here: the figures
    must not depend on a cache), the summaries equal to the stored ones that predict prints."""

    def no_trace(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a profile the check needs is not shipped: {args}")

    monkeypatch.setattr(profile_trace, "compute", no_trace)
    catalog = load_catalog()
    validation = shipped()
    assert validation is not None
    checked, _ = check(list(load_rows()), catalog)
    now = summarize(checked)
    assert now.rows == validation.rows and now.gpus == validation.gpus
    assert math.isclose(now.mape, validation.mape, abs_tol=0.005), (now, validation)
    assert math.isclose(now.median_ratio, validation.median_ratio, abs_tol=0.005)
    assert math.isclose(now.inside_range, validation.inside_range, abs_tol=1e-9)
    assert validation.rows >= 10 and validation.sources >= 3 and len(validation.gpus) >= 3
    note = range_note("llama-3.1-8b")
    assert f"checked on {validation.rows} published fine-tuning rows" in note
    assert f"off by {validation.mape:.0%} on average" in note
