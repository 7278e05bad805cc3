"""A user's own ``torch.nn.Module`` measured by ``bench`` (issue 44, deliverable 2): loaded by
the protocol of ``torch/user_module.py``, trained by PyTorch's own step (autocast, GradScaler,
torch.compile, channels_last), without Keras, and stored as every backend's runs are.

Each measuring child that imports torch costs seconds (a compiled one, more), so the runs are
few and each checks all it can; the protocol's edge cases run in this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PATIENCE_S, run_in_process

torch = pytest.importorskip("torch", reason="the PyTorch backend needs 'gpuscout[torch]'")

from gpuscout.core.errors import UserError  # noqa: E402
from gpuscout.measure.backends.torch import module_step, user_module  # noqa: E402
from gpuscout.measure.backends.torch.runtime import Device  # noqa: E402
from gpuscout.measure.user_spec import FunctionSpec  # noqa: E402

MODELS = Path(__file__).parents[2] / "examples" / "models"
TORCH_CNN = f"{MODELS / 'torch_cnn.py'}:build"
FEW = ("--batch-size", "8", "--steps", "12", "--warmup-steps", "2")
CPU = Device("CPU:0", "CPU", "a CPU", "cpu")
# Keras, TensorFlow and JAX cannot be imported, yet importlib.util.find_spec finds them (as
# conftest's blocker does not: torch._dynamo asks find_spec which frameworks exist, on import)
BLOCK_KERAS = """import importlib.machinery
import sys


class _Blocked:
    def create_module(self, spec):
        raise ImportError("blocked by the test: " + spec.name)

    def exec_module(self, module):
        raise ImportError("blocked by the test: " + module.__name__)


class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "jax", "jaxlib", "tf_keras"):
            return importlib.machinery.ModuleSpec(name, _Blocked(), origin="/blocked/" + name)
        return None


sys.meta_path.insert(0, _Block())
"""


def _bench(db: str, *args: str) -> dict[str, Any]:
    r = run_in_process("bench", *args, *FEW, "--db", db, "--json", stderr_file=True)
    assert r.code == 0, r.err
    return r.json()  # type: ignore[no-any-return]


def _flops_of_one_step(batch: int) -> float:
    """torch_cnn's training step counted here, as the user's own loop would run it."""
    from torch.utils.flop_counter import FlopCounterMode

    parts = user_module.load(FunctionSpec(MODELS / "torch_cnn.py", "build"), batch)
    optimizer = parts.make_optimizer(parts.module.parameters())
    counter = FlopCounterMode(display=False)
    with counter:
        parts.loss(parts.forward(), parts.targets).backward()
        optimizer.step()
    return float(counter.get_total_flops())


def test_a_plain_module_runs_on_torch_without_keras_and_counts_its_flops(
    tmp_path: Path,
) -> None:
    """No --backend: the file imports torch, so the run is PyTorch's, with Keras, TensorFlow
    and JAX blocked from every process (none is imported); the run has its interval, its MFU
    and FlopCounterMode's count of the step, said as assumed, and the model's name."""
    db = str(tmp_path / "runs.sqlite")
    (tmp_path / "sitecustomize.py").write_text(BLOCK_KERAS)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    r = subprocess.run(
        [sys.executable, "-m", "gpuscout", "bench", "--model", TORCH_CNN, *FEW, "--db", db,
         "--json"],
        env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
        timeout=PATIENCE_S,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    assert run["status"] == "ok" and run["backend"] == "torch", run.get("message")
    assert run["config"]["backend"] == "torch" and run["workload"] == TORCH_CNN
    assert run["batch_size"] == 8 and run["measured_steps"] == 12
    rate = run["samples_per_second"]
    assert 0 < rate["ci_low"] <= rate["median"] <= rate["ci_high"]
    assert run["flops_per_step"] == _flops_of_one_step(8)
    assert 0 < run["mfu"] <= 1
    assert run["peak_memory_bytes"] is None and run["memory_method"].startswith("not measured")
    env = run["env"]
    assert env["torch"].startswith("2.") and "keras" not in env and env["workload_hash"]
    assert env["torch_compile"] is False and env["precision"] == "fp32"
    said = " ".join(run["assumptions"])
    assert "a plain PyTorch model (its file imports torch, not Keras)" in said
    assert "FlopCounterMode on one eager training step" in said and "eager (no torch" in said
    shown = run_in_process("runs", "show", str(run["id"]), "--db", db)
    assert shown.code == 0 and "torch.compile off" in shown.out and "no Keras" in shown.out


def test_mixed_bfloat16_channels_last_and_compile_are_measured_and_compared(
    tmp_path: Path,
) -> None:
    """autocast bfloat16 with the module and its images in channels_last; a compiled fp32 run
    (compiled before the clock); a Keras cnn.py of the same layers on PyTorch. runs compare
    lists each pair as not comparable, naming why: another precision, torch.compile, another
    model (the Keras file is other code, so its speed is no ranking of the torch file's)."""
    db = str(tmp_path / "runs.sqlite")
    bf16 = _bench(db, "--model", TORCH_CNN, "--precision", "mixed_bfloat16", "--channels-last")
    assert bf16["status"] == "ok" and bf16["precision"] == "mixed_bfloat16"
    assert bf16["config"]["channels_last"] is True and bf16["env"]["channels_last"] is True
    said = " ".join(bf16["assumptions"])
    assert "torch.autocast to bfloat16" in said and "torch.channels_last" in said
    assert bf16["flops_per_step"] == _flops_of_one_step(8)  # the same math, in bfloat16

    compiled = _bench(db, "--model", TORCH_CNN, "--compile")
    assert compiled["status"] == "ok" and compiled["config"]["compile"] is True
    assert compiled["env"]["torch_compile"] is True and compiled["flops_per_step"] > 0
    assert "compiled with torch.compile (Inductor" in " ".join(compiled["assumptions"])

    keras_cnn = _bench(db, "--backend", "torch", "--model", f"{MODELS / 'cnn.py'}:build")
    assert keras_cnn["status"] == "ok" and keras_cnn["env"]["keras_backend"] == "torch"
    for a, b, why in ((compiled, bf16, "precision"), (compiled, keras_cnn, "workload")):
        r = run_in_process("runs", "compare", str(a["id"]), str(b["id"]), "--db", db)
        assert r.code == 0, r.err
        assert "not comparable" in r.out and why in r.out and "torch.compile" in r.out, r.out


def test_the_protocols_refusals_are_one_line(tmp_path: Path) -> None:
    """What the user must fix is one line, exit 2, nothing stored: a typed --backend of
    another framework (before any child), a module without example_batch, an example batch of
    the wrong size, a builder that returns no Module, --channels-last without an image input,
    --compile and --loop fit where they cannot apply; a forward pass that raises, a loss that
    is not a scalar and a module with nothing to train (the first step, before any clock)."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import torch\n\n"
        "class NoBatch(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.lin = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return self.lin(x)\n\n"
        "class Fixed(NoBatch):\n"
        "    def example_batch(self, n):\n"
        "        return torch.randn(3, 4), torch.randint(0, 2, (3,))\n\n"
        "class Flat(NoBatch):\n"
        "    def example_batch(self, n):\n"
        "        return torch.randn(n, 4), torch.randint(0, 2, (n,))\n\n"
        "def no_batch():\n    return NoBatch()\n\n"
        "def fixed():\n    return Fixed()\n\n"
        "def not_module():\n    return 'a string'\n\n"
        "def flat():\n    return Flat()\n\n"
        "class Raises(Flat):\n"
        "    def forward(self, x):\n        raise RuntimeError('shapes disagree')\n\n"
        "class Vector(Flat):\n"
        "    def loss(self, out, y):\n        return out.sum(dim=1)\n\n"
        "class Frozen(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.randn(4, 2))\n\n"
        "    def forward(self, x):\n        return x @ self.w\n\n"
        "    def example_batch(self, n):\n"
        "        return torch.randn(n, 4), torch.randn(n, 2)\n\n"
        "def raises():\n    return Raises()\n\n"
        "def vector():\n    return Vector()\n\n"
        "def frozen():\n    return Frozen()\n"
    )
    db = str(tmp_path / "runs.sqlite")
    cases = [
        (("--backend", "jax", "--model", TORCH_CNN), "which --backend jax cannot run"),
        (("--model", f"{bad}:no_batch"), "has no example_batch(batch_size) method"),
        (("--model", f"{bad}:fixed"), "first dimension is 3, not the batch size 8"),
        (("--model", f"{bad}:not_module"), "returned str, not a torch.nn.Module"),
        (("--model", f"{bad}:flat", "--channels-last"), "gives no 4-D input"),
        (("--workload", "mlp", "--compile"), "--compile applies to a plain PyTorch --model"),
        (("--model", TORCH_CNN, "--loop", "fit"), "--loop fit is Keras' model.fit"),
        (("--model", f"{bad}:raises"), "first training step raised RuntimeError: shapes"),
        (("--model", f"{bad}:vector"), "only for scalar outputs"),
        (("--model", f"{bad}:frozen"), "has no trainable parameter"),
    ]
    for args, said in cases:
        r = run_in_process("bench", *args, *FEW, "--db", db, "--quiet", stderr_file=True)
        assert r.code == 2, (args, r.err)
        lines = [line for line in r.err.splitlines() if line.startswith("gpuscout: error:")]
        assert len(lines) == 1 and said in lines[0] and "Traceback" not in r.err, (args, r.err)
    # the table cuts a long path short, so the stored rows are counted, not searched
    assert run_in_process("runs", "list", "--db", db, "--json").json() == []


PAIR = """import torch


class Pair(torch.nn.Module):
    \"\"\"Two inputs, by keyword or by position; no loss, no optimizer of its own.\"\"\"

    def __init__(self, keyed, float_targets=False):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 3), torch.nn.Linear(2, 3)
        self.keyed, self.float_targets = keyed, float_targets

    def forward(self, left, right):
        return self.a(left) + self.b(right)

    def example_batch(self, n):
        x = {"left": torch.randn(n, 4), "right": torch.randn(n, 2)}
        y = torch.randn(n, 3) if self.float_targets else torch.randint(0, 3, (n,))
        return (x if self.keyed else (x["left"], x["right"])), y


def build():
"""


def _load(tmp_path: Path, body: str, batch: int = 5) -> user_module.TorchParts:
    path = tmp_path / "pair.py"
    path.write_text(PAIR + body)
    return user_module.load(FunctionSpec(path, "build"), batch)


@pytest.mark.parametrize("keyed", [True, False])
def test_dict_and_tuple_inputs_train_with_the_default_loss_and_optimizer(
    tmp_path: Path, keyed: bool
) -> None:
    """A dict of inputs is passed by keyword, a tuple by position; without loss() and
    make_optimizer() gpuscout's choices are used and said; the step trains the weights, in
    float16 under a GradScaler on a CPU."""
    parts = _load(tmp_path, f"    return Pair(keyed={keyed})\n")
    said = " ".join(parts.assumptions)
    assert "cross-entropy" in said and "torch.optim.AdamW(lr=1e-3)" in said
    assert isinstance(parts.inputs, dict) is keyed
    assert parts.forward().shape == (5, 3)
    optimizer = module_step.make_optimizer(torch, parts)
    before = parts.module.a.weight.detach().clone()
    step = module_step.train_step(torch, parts, optimizer, "mixed_float16", CPU)
    inputs = module_step.placed(torch, parts.inputs, CPU)
    loss = step(inputs, parts.targets)
    assert loss.dtype == torch.float32 and bool(torch.isfinite(loss))
    assert not torch.equal(before, parts.module.a.weight)
    assert module_step.broken_weights(torch, parts.module) is None
    assert not module_step.has_4d_tensor(torch, inputs)


def test_float_targets_take_mean_squared_error(tmp_path: Path) -> None:
    parts = _load(tmp_path, "    return Pair(keyed=True, float_targets=True)\n")
    assert "mean squared error" in " ".join(parts.assumptions)
    assert float(parts.loss(parts.forward(), parts.targets).detach()) > 0


def test_make_optimizer_returning_no_optimizer_is_refused(tmp_path: Path) -> None:
    parts = _load(
        tmp_path, "    m = Pair(keyed=True)\n    m.make_optimizer = lambda p: 3\n    return m\n"
    )
    with pytest.raises(UserError, match=r"returned int, not a torch\.optim\.Optimizer"):
        module_step.make_optimizer(torch, parts)


def test_channels_last_places_only_image_batches() -> None:
    images = torch.randn(2, 3, 4, 4)
    placed = module_step.placed(torch, {"img": images, "ids": torch.ones(2, 5)}, CPU, True)
    assert placed["img"].is_contiguous(memory_format=torch.channels_last)
    assert not images.is_contiguous(memory_format=torch.channels_last)
    assert placed["ids"].is_contiguous()
    assert module_step.has_4d_tensor(torch, ([1], (images,)))
