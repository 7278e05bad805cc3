"""``predict``, ``cost`` and ``advise`` of a plain PyTorch ``--model`` (issue 44): its step
captured once in the tracing child (PyTorch found from the file's imports), predicted eager at
the pytorch stack level, and read from the cache the next time.

Each capture starts a child that imports torch (seconds): the tests share one batch, so one
capture serves predict, cost and advise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_in_process

pytest.importorskip("torch", reason="the capture needs pip install 'gpuscout[torch]'")

MODEL = f"{Path(__file__).parents[2] / 'examples' / 'models' / 'torch_cnn.py'}:build"
GPUS = ("--gpus", "rtx-4090,a100-80gb-sxm,h100-sxm")
BATCH = ("-b", "256")


def test_predict_cost_and_advise_a_torch_module_from_one_cached_capture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first predict captures the step (the child's answer), the H100 ranks fastest, the
    assumptions say how the step was captured and which stack it is predicted at; then a
    trace timeout gpuscout would refuse proves predict, cost and advise read the cache."""
    first = run_in_process("predict", "--model", MODEL, *GPUS, *BATCH, "--json",
                           stderr_file=True)  # fmt: skip
    assert first.code == 0, first.err
    rows = first.json()
    assert {r["gpu"] for r in rows} == {"rtx-4090", "a100-80gb-sxm", "h100-sxm"}
    fastest = max(rows, key=lambda r: r["samples_per_second"])
    assert fastest["gpu"] == "h100-sxm"
    said = " ".join(rows[0]["common_assumptions"] + rows[0]["assumptions"])
    assert "FakeTensorMode" in said and "op by op, as eager PyTorch" in said
    assert "software stack: pytorch" in said and "GradScaler" in said

    monkeypatch.setenv("GPUSCOUT_TRACE_TIMEOUT", "never")  # a trace would now be refused
    again = run_in_process("predict", "--model", MODEL, *GPUS, *BATCH, "--json")
    assert again.code == 0, again.err
    assert [r["samples_per_second"] for r in again.json()] == [
        r["samples_per_second"] for r in rows
    ]
    cost = run_in_process("cost", "--model", MODEL, *BATCH, "--samples", "1000000", "--json")
    assert cost.code == 0, cost.err
    assert "software stack: pytorch" in cost.out
    advise = run_in_process("advise", "--model", MODEL, *BATCH, "--samples", "1000000",
                            "--json")  # fmt: skip
    assert advise.code == 0, advise.err
    assert "torch_cnn.py:build" in advise.out
    # a new batch is captured again: the refused trace says so in one line
    other = run_in_process("predict", "--model", MODEL, *GPUS, "-b", "8")
    assert other.code == 2 and "GPUSCOUT_TRACE_TIMEOUT='never'" in other.err, other.err


def test_a_module_without_example_batch_is_one_line_from_predict(tmp_path: Path) -> None:
    """The protocol's error comes back from the capturing child as predict's own one line; so
    does a forward pass that raises, with PyTorch's way to see the traceback."""
    path = tmp_path / "bare.py"
    path.write_text("import torch\n\n\ndef build():\n    return torch.nn.Linear(4, 2)\n")
    r = run_in_process("predict", "--model", f"{path}:build", *GPUS, stderr_file=True)
    assert r.code == 2, r.err
    assert "no example_batch(batch_size) method" in r.err and "Traceback" not in r.err
    # a step that raises while captured: PyTorch's advice, not Keras' (no .keras file here)
    path.write_text(
        "import torch\n\n\nclass Broken(torch.nn.Linear):\n"
        "    def forward(self, x):\n        raise RuntimeError('shapes disagree')\n\n"
        "    def example_batch(self, n):\n"
        "        return torch.randn(n, 4), torch.randint(0, 2, (n,))\n\n\n"
        "def build():\n    return Broken(4, 2)\n"
    )
    r = run_in_process("predict", "--model", f"{path}:build", *GPUS, stderr_file=True)
    assert r.code == 2 and "RuntimeError: shapes disagree" in r.err, r.err
    assert "loss.backward()" in r.err and "keras" not in r.err.lower(), r.err
    # nothing to train (a buffer, no parameter): said so, not the default optimizer's complaint
    path.write_text(
        "import torch\n\n\nclass Frozen(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.randn(4, 2))\n\n"
        "    def forward(self, x):\n        return x @ self.w\n\n"
        "    def example_batch(self, n):\n"
        "        return torch.randn(n, 4), torch.randn(n, 2)\n\n\n"
        "def build():\n    return Frozen()\n"
    )
    r = run_in_process("predict", "--model", f"{path}:build", *GPUS, stderr_file=True)
    assert r.code == 2 and "has no trainable parameter" in r.err, r.err


def test_torch_refusals_name_what_works() -> None:
    """A built-in workload is a Keras model (not captured by PyTorch); another framework
    named for a plain PyTorch model cannot run it."""
    workload = run_in_process("predict", "--workload", "mlp", "--backend", "torch", *GPUS)
    assert workload.code == 2 and "captures a plain PyTorch --model" in workload.err
    jax = run_in_process("predict", "--model", MODEL, "--backend", "jax", *GPUS)
    assert jax.code == 2 and "is a plain PyTorch model" in jax.err


def test_scout_measures_and_predicts_a_torch_module(tmp_path: Path) -> None:
    """scout's whole journey for a plain PyTorch model, found from its file: the module is
    benched on PyTorch (no Keras), stored with its backend, and predicted from its captured
    step on the catalog's GPUs, in one report."""
    db, html = tmp_path / "runs.sqlite", tmp_path / "r.html"
    r = run_in_process(
        "scout", "--model", MODEL, "--seconds", "4", "--samples", "50000", "--epochs", "10",
        "-b", "16", "--db", str(db), "--html", str(html), stderr_file=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "torch" in r.out and "predicted" in r.out and html.is_file()
    listed = run_in_process("runs", "list", "--db", str(db), "--json")
    assert listed.code == 0, listed.err
    (run,) = listed.json()
    assert run["backend"] == "torch" and run["status"] == "ok", run


def test_memory_of_a_torch_module_from_its_captured_step() -> None:
    """``memory --model`` counts a plain PyTorch module's training memory from the same
    captured step predict reads (weights, Adam's two moments, activations), said as PyTorch's;
    an LLM's shape options beside it are refused, naming both."""
    r = run_in_process("memory", "--model", MODEL, *BATCH, "--gpu", "rtx-4090", "--json")
    assert r.code == 0, r.err
    out = r.json()
    assert "on PyTorch" in out["model"] and "batch 256" in out["model"], out["model"]
    parts = out["breakdown_gb"]
    assert parts["activations"] > 0 and {"weights", "gradients", "optimizer state"} <= set(parts)
    assert out["gpus"][0]["verdict"] == "fits"
    both = run_in_process("memory", "--model", MODEL, "--params", "7e9")
    assert both.code == 2 and "--params" in both.err and "Traceback" not in both.err, both.err


def test_compile_predicts_the_fused_step_and_says_so() -> None:
    """``--compile``: the same captured step, its kernels fused (fewer launches, less traffic),
    so at least as fast as eager on every GPU, and the method says it is torch.compile's
    stand-in; a Keras workload with --compile is refused, naming XLA."""
    rates = {}
    for extra in ((), ("--compile",)):
        r = run_in_process("predict", "--model", MODEL, *GPUS, *BATCH, *extra, "--json",
                           stderr_file=True)  # fmt: skip
        assert r.code == 0, r.err
        rates[extra] = {row["gpu"]: row["samples_per_second"] for row in r.json()}
    assert all(rates[("--compile",)][g] > rates[()][g] for g in rates[()]), rates
    shown = run_in_process("predict", "--model", MODEL, *GPUS, *BATCH, "--compile")
    said = " ".join(shown.out.split())  # the assumption as a reader reads it, unwrapped
    assert shown.code == 0 and "compiled (torch.compile): the captured step's kernels" in said
    keras = run_in_process("predict", "--workload", "mlp", "--compile")
    assert keras.code == 2 and "--workload mlp is a Keras model" in keras.err, keras.err


def test_a_make_optimizer_returning_no_optimizer_is_named_by_predict_as_by_bench(
    tmp_path: Path,
) -> None:
    """The capture makes the optimizer as bench does (``module_step.make_optimizer``), so a
    ``make_optimizer`` returning something else is the same one line, not an AttributeError
    from deep in the captured step."""
    path = tmp_path / "badopt.py"
    path.write_text(
        "import torch\n\n\nclass M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.lin = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return self.lin(x)\n\n"
        "    def example_batch(self, n):\n"
        "        return torch.randn(n, 4), torch.randint(0, 2, (n,))\n\n"
        "    def make_optimizer(self, parameters):\n        return 'sgd'\n\n\n"
        "def build():\n    return M()\n"
    )
    r = run_in_process("predict", "--model", f"{path}:build", *GPUS, stderr_file=True)
    assert r.code == 2 and "returned str, not a torch.optim.Optimizer" in r.err, r.err
    assert "Traceback" not in r.err
