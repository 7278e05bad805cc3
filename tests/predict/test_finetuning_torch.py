"""The published fine-tuning rows modelled from the plain-PyTorch decoder's captured step (issue
44): ``check(..., traced="torch")`` takes each row's step from ``examples/models/torch_llama.py``
captured from torch (shipped in ``predict/data/profiles_torch_llm.json`` by
``scripts/ship_torch_llm_profiles.py``), at the row's shape and batch, and predicts the row as
the JAX-traced check does. The figures are ``docs/predict.md``'s (``benchmarks/
finetuning_accuracy.py --traced torch``). No framework: the shipped profiles and the rows."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.errors import UserError
from gpuscout.predict import finetuning_torch, profile
from gpuscout.predict.finetuning_check import check, summarize
from gpuscout.predict.finetuning_rows import excluded, load_rows

# docs/predict.md's "From the decoder written in plain PyTorch" (2026-12-07)
DOCUMENTED = {"mape": 0.129, "median_ratio": 0.878, "inside_range": 9 / 11,
              "relative_mape": 0.226}  # fmt: skip


@pytest.fixture
def no_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Capturing a step is refused: the figures must come from the shipped profiles."""

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a profile the check needs is not shipped: {args}")

    monkeypatch.setattr(finetuning_torch, "capture", refused)


def test_the_torch_captured_figures_are_the_documented_ones(no_capture: None) -> None:
    """Every predictable row from its shipped torch-captured profile, at its own batch; the
    summary is the one documented beside the JAX-traced figures."""
    catalog = load_catalog()
    checked, left = check(list(load_rows()), catalog, "torch")
    jax, _ = check(list(load_rows()), catalog)
    assert len(checked) == len(jax) == 11 and len(left) == 6
    for c, j in zip(checked, jax, strict=True):
        assert c.row == j.row
        assert c.predicted != j.predicted  # another step, not the JAX one read twice
    now = summarize(checked)
    assert now.rows == 11 and now.sources == 3
    for name, value in DOCUMENTED.items():
        assert math.isclose(getattr(now, name), value, abs_tol=0.0005), (name, now)


def test_each_row_takes_the_decoder_captured_at_its_shape(no_capture: None) -> None:
    """A row's profile is the torch capture of its own model, sequence, rank, checkpointing and
    precision (said in its method), rescaled to its batch."""
    catalog = load_catalog()
    for row in load_rows():
        if excluded(row, catalog):
            continue
        found = finetuning_torch.row_profile(row, catalog, None)
        assert found.backend == "torch" and found.batch == row.batch_size_per_gpu
        assert found.dims["seq_len"] == row.seq_len and found.precision == row.policy
        assert found.dims["lora_rank"] == (row.lora_rank or 0)
        assert finetuning_torch.MODULE in found.method
        assert "torch.utils.checkpoint" in found.method  # every predictable row checkpoints


def test_a_shape_neither_shipped_nor_cached_needs_the_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without the shipped torch profiles, an empty cache and no module to capture from, the
    row is one line saying where to run it."""
    kept = {k: p for k, p in profile._shipped().items() if p.backend != "torch"}
    monkeypatch.setattr(profile, "_shipped", lambda: kept)
    monkeypatch.setattr(profile, "cache_dir", lambda: tmp_path)
    row = next(r for r in load_rows() if not excluded(r, load_catalog()))
    with pytest.raises(UserError, match=r"finetuning_accuracy\.py --traced torch"):
        finetuning_torch.row_profile(row, load_catalog(), None)
