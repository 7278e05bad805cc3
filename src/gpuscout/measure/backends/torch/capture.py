"""A user's PyTorch training step captured once on the CPU, from shapes alone, for ``predict``.

The step (forward, loss, backward, ``optimizer.step()``) runs under PyTorch's
``FakeTensorMode``: every tensor has its shape, dtype and device but no memory, every op runs
its meta kernel, so ResNet-50 at batch 256 is captured in seconds with no compute and no
activation memory. A ``TorchDispatchMode`` records each aten op the dispatcher runs (the ones
that would launch kernels on a GPU: below autograd, after autocast), with its arguments and
results, and ``to_hlo.py`` writes them as HLO text, which ``predict`` counts like any other
traced step.

What the capture assumes, said in the profile's method:

- the step's second run is recorded, the first left out: it creates the optimizer's state
  (``zeros_like`` per weight) and initialises lazy modules, once in a training run;
- mixed precision is ``torch.autocast`` (float16 or bfloat16) over the forward pass and the
  loss, as PyTorch's AMP recipe runs it; the CPU's autocast casts the same ops as CUDA's
  (matmuls, convolutions and attention in 16 bits, norms and softmax as their inputs or
  float32); float16 adds ``GradScaler``'s loss scaling and its one pass over the gradients;
- the optimizer steps with its multi-tensor (``foreach``) kernels, PyTorch's default on a
  GPU, unless the user's ``make_optimizer`` chose otherwise;
- ``scaled_dot_product_attention`` is the fused (flash) kernel a GPU runs: the CPU's own
  fused kernel is what the capture sees, written as the fused attention call;
- what ``torch.utils.checkpoint`` recomputes in the backward pass (ops run with gradients on
  inside the autograd engine) is named as a recomputed forward (``to_hlo.RECOMPUTE``), so
  its work is timed and what it hands the backward is counted as a checkpointed step's.

A module built on the meta device (``with torch.device("meta")``: a model too big to build,
shapes only) is captured as if on the CPU: its weights and buffers become fake CPU tensors.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.step_ir import StepIR
from gpuscout.measure.backends.torch import module_step
from gpuscout.measure.backends.torch.aten_ops import AtenOp
from gpuscout.measure.backends.torch.op_recorder import OpRecorder, nbytes
from gpuscout.measure.backends.torch.to_hlo import to_hlo

# GradScaler's first scale (``torch.amp.GradScaler(init_scale=2**16)``)
LOSS_SCALE = 2.0**16
HOW = (
    "aten ops of the PyTorch step (forward, loss, backward, optimizer.step) captured once on "
    "the CPU under FakeTensorMode (shapes only: nothing computed or allocated), its second "
    "step recorded"
)


def user_step_hlo(spec: str, batch: int, precision: str) -> StepIR:
    """The user's module's training step (``--model FILE.py:FUNCTION``), captured."""
    return _capture(spec, batch, precision, "train")


def forward_hlo(
    workload: str | None, spec: str | None, dims: Mapping[str, int], batch: int, precision: str
) -> StepIR:
    """The user's module's forward pass (inference: ``eval()``, no gradients), captured.
    Only a user's module: the built-in workloads are Keras models (``dims`` unused)."""
    if spec is None:
        raise UserError(
            f"the PyTorch backend captures a plain PyTorch --model, not --workload {workload}.",
            "predict the built-in workload with --backend tensorflow or jax.",
        )
    return _capture(spec, batch, precision, "forward")


def _capture(spec: str, batch: int, precision: str, kind: str) -> StepIR:
    from gpuscout.measure.backends.torch import user_module
    from gpuscout.measure.backends.torch.runtime import import_torch
    from gpuscout.measure.user_spec import parse_model_spec

    torch = import_torch()
    function = parse_model_spec(spec, check=False).function
    if function is None:
        raise UserError(
            f"--model {spec} is a Keras file: the PyTorch backend captures a torch.nn.Module "
            "built by a Python function.",
            "pass --model FILE.py:FUNCTION returning a torch.nn.Module, or --backend "
            "tensorflow for a .keras file.",
        )
    parts = user_module.load(function, batch)
    ops, sizes = capture(torch, parts, precision, kind)
    name = re.sub(r"[^\w.\-]", "_", type(parts.module).__name__) or "model"
    # predict says the eager view itself (``profile.OP_BY_OP``, the kernels it counts)
    notes = [HOW, *_precision_notes(precision, kind), *parts.assumptions]
    if kind == "train":
        notes.insert(1, "the optimizer's multi-tensor (foreach) kernels, PyTorch's default "
                     "on a GPU, unless make_optimizer chose otherwise")  # fmt: skip
    return StepIR(
        hlo=to_hlo(ops, name),
        params=sizes["params"],
        param_bytes=sizes["param_bytes"],
        optimizer_state_bytes=sizes["optimizer_state_bytes"],
        tf_version=f"torch {torch.__version__}",
        model_name=name,
        frozen_bytes=sizes["frozen_bytes"],
        notes="; ".join(notes),
    )


def _precision_notes(precision: str, kind: str) -> list[str]:
    if precision == "fp32":
        return ["float32 throughout (no autocast)"]
    dtype = "float16" if precision == "mixed_float16" else "bfloat16"
    said = [f"torch.autocast({dtype}) over the forward pass and the loss (AMP)"]
    if precision == "mixed_float16" and kind == "train":
        said.append("GradScaler's loss scaling, and its unscale and check of the gradients")
    return said


def capture(
    torch: Any, parts: Any, precision: str, kind: str
) -> tuple[list[AtenOp], dict[str, int]]:
    """The aten ops of one step of ``parts`` (``user_module.TorchParts``) and the sizes of its
    weights and optimizer state; ``kind``: "train" (the whole step) or "forward"."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    module = parts.module
    _to_fake(torch, module, mode)
    inputs, targets = _fake_tree(torch, parts.inputs, mode), _fake_tree(torch, parts.targets, mode)
    autocast: Any = contextlib.nullcontext()
    if precision != "fp32":
        dtype = torch.float16 if precision == "mixed_float16" else torch.bfloat16
        autocast = torch.autocast("cpu", dtype=dtype)
    recorder = OpRecorder(torch)
    trainable = [p for p in module.parameters() if p.requires_grad]
    frozen = [p for p in module.parameters() if not p.requires_grad]
    sizes = {
        "params": sum(int(p.numel()) for p in trainable),
        "param_bytes": sum(nbytes(p) for p in trainable),
        "frozen_bytes": sum(nbytes(p) for p in frozen),
        "optimizer_state_bytes": 0,
    }
    if kind == "forward":
        module.eval()
        with mode, torch.no_grad(), recorder, autocast:
            parts.forward(inputs)
        return recorder.ops, sizes
    module.train()
    with mode:  # made and checked as bench makes it: one line for a make_optimizer at fault
        optimizer = module_step.make_optimizer(torch, parts)
        for group in optimizer.param_groups:
            if group.get("foreach", False) is None and not group.get("fused"):
                group["foreach"] = True  # multi_tensor_apply, as on a GPU
        scaled = precision == "mixed_float16"
        _step(torch, parts, module, optimizer, inputs, targets, autocast, scaled, None)
        _step(torch, parts, module, optimizer, inputs, targets, autocast, scaled, recorder)
    sizes["optimizer_state_bytes"] = sum(
        nbytes(v) for state in optimizer.state.values() for v in state.values()
        if isinstance(v, torch.Tensor)
    )  # fmt: skip
    return recorder.ops, sizes


def _step(torch: Any, parts: Any, module: Any, optimizer: Any, inputs: Any, targets: Any,
          autocast: Any, scaled: bool, recorder: OpRecorder | None) -> None:  # fmt: skip
    """One training step, recorded by ``recorder`` (None: run only)."""
    with recorder if recorder is not None else contextlib.nullcontext():
        with autocast:
            loss = parts.loss(parts.forward(inputs), targets)
        if recorder is not None:
            recorder.phase = "backward"
        (loss * LOSS_SCALE if scaled else loss).backward()
        grads = [p.grad for p in module.parameters() if p.grad is not None]
        if recorder is not None and scaled:  # GradScaler.unscale_: one pass over the grads
            recorder.ops.append(AtenOp("_amp_foreach_non_finite_check_and_unscale_",
                                       {"self": [recorder.ref(g) for g in grads]}, [],
                                       "backward"))  # fmt: skip
        if recorder is not None:
            recorder.phase = "optimizer"
        optimizer.step()
        optimizer.zero_grad()


def _to_fake(torch: Any, module: Any, mode: Any) -> None:
    """The module's weights and buffers swapped for fake tensors of their shapes, in place (a
    weight shared by two layers stays one)."""
    seen: dict[int, Any] = {}
    for sub in module.modules():
        for key, p in list(sub._parameters.items()):
            if p is not None:
                if id(p) not in seen:
                    seen[id(p)] = torch.nn.Parameter(_fake(torch, p, mode), p.requires_grad)
                sub._parameters[key] = seen[id(p)]
        for key, b in list(sub._buffers.items()):
            if b is not None:
                seen.setdefault(id(b), _fake(torch, b, mode))
                sub._buffers[key] = seen[id(b)]


def _fake(torch: Any, t: Any, mode: Any) -> Any:
    """``t`` as a fake tensor; a meta tensor (a model built with no memory) as a CPU one."""
    if t.device.type != "meta":
        return mode.from_tensor(t)
    with mode:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cpu")


def _fake_tree(torch: Any, value: Any, mode: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return mode.from_tensor(value)
    if isinstance(value, dict):
        return {k: _fake_tree(torch, v, mode) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(_fake_tree(torch, v, mode) for v in value)
    return value


__all__ = ["capture", "forward_hlo", "user_step_hlo"]
