"""``gpuscout bench --backend torch`` as a user runs it (issue 44): a real process whose
measuring child trains Keras on PyTorch with ``model.fit``, its table naming PyTorch and what
was not measured; without PyTorch, one line with the install command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, run_in_process


def test_bench_on_torch_with_model_fit_prints_pytorch_and_is_listed(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="needs pip install 'gpuscout[torch]'")
    db = str(tmp_path / "runs.sqlite")
    r = run_cli("bench", "--backend", "torch", "--workload", "cnn-small", "--loop", "fit",
                "--batch-size", "8", "--steps", "8", "--warmup-steps", "2", "--db", db)  # fmt: skip
    assert r.code == 0, r.err
    assert "PyTorch 2.13" in r.out and "loop fit" in r.out
    assert "Keras' model.fit, timed per batch by a callback" in r.out
    assert "peak memory" in r.out and "not measured: PyTorch reports no allocator peak" in r.out
    assert "MFU" in r.out and "Traceback" not in r.err
    listed = run_in_process("runs", "list", "--db", db)
    assert listed.code == 0 and "cnn-small" in listed.out and "fp32 on PyTorch" in listed.out


def test_bench_on_torch_without_torch_is_one_line_with_the_install_command() -> None:
    """PyTorch blocked from import (as if not installed): refused before a child starts."""
    r = run_cli("bench", "--backend", "torch", "--workload", "mlp", "--steps", "3", block_tf=True)
    assert r.code == 2, r.err
    assert "--backend torch needs PyTorch, which is not installed" in r.err
    assert "pip install 'gpuscout[torch]'" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
