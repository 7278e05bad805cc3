"""The training step of a user's own ``torch.nn.Module``, as a plain PyTorch loop writes it.

Its own module (not ``step.py``, which trains a Keras model on PyTorch) because nothing here
imports Keras: the step is PyTorch's own AMP recipe, so what is timed is what the user's
training script runs, with or without ``torch.compile``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from gpuscout.core.errors import UserError, is_oom
from gpuscout.measure.backends.torch.runtime import COMPUTE_DTYPES, Device
from gpuscout.measure.backends.torch.user_module import TorchParts

T = TypeVar("T")
COMPILED = "compiled with torch.compile (Inductor, its default mode), the module's forward pass"


def placed(torch: Any, data: Any, device: Device, channels_last: bool = False) -> Any:
    """``data`` (a tensor, or tuples, lists and dicts of them) moved to ``device`` once; with
    ``channels_last`` its 4-D tensors in ``torch.channels_last`` memory format (NHWC)."""
    if isinstance(data, torch.Tensor):
        moved = data.to(device.torch_name)
        if channels_last and moved.dim() == 4:
            moved = moved.contiguous(memory_format=torch.channels_last)
        return moved
    if isinstance(data, dict):
        return {k: placed(torch, v, device, channels_last) for k, v in data.items()}
    if isinstance(data, tuple | list):
        return type(data)(placed(torch, v, device, channels_last) for v in data)
    return data  # a number or a string the user's loss takes: left as it is


def has_4d_tensor(torch: Any, data: Any) -> bool:
    """Whether ``data`` holds a 4-D tensor (an image batch), the one ``channels_last`` applies
    to."""
    if isinstance(data, torch.Tensor):
        return bool(data.dim() == 4)
    if isinstance(data, dict):
        return any(has_4d_tensor(torch, v) for v in data.values())
    if isinstance(data, tuple | list):
        return any(has_4d_tensor(torch, v) for v in data)
    return False


def make_optimizer(torch: Any, parts: TorchParts) -> Any:
    """The module's optimizer, made over its parameters once they are on the device (an
    optimizer made before the move would hold the CPU copies' state)."""
    parts.require_trainable()
    try:
        optimizer = parts.make_optimizer(parts.module.parameters())
    except Exception as exc:
        if is_oom(exc):
            raise
        raise UserError(
            f"--model {parts.label}: make_optimizer(parameters) raised {type(exc).__name__}: "
            f"{str(exc).strip()[:200]}",
            "fix make_optimizer; calling it in Python shows the traceback.",
        ) from None
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise UserError(
            f"--model {parts.label}: make_optimizer(parameters) returned "
            f"{type(optimizer).__name__}, not a torch.optim.Optimizer.",
            "return an optimizer over the parameters given, e.g. torch.optim.AdamW(parameters).",
        )
    return optimizer


def train_step(
    torch: Any, parts: TorchParts, optimizer: Any, precision: str, device: Device,
    forward: Callable[[Any], Any] | None = None,
) -> Callable[[Any, Any], Any]:  # fmt: skip
    """The step ``(inputs, targets) -> loss``: gradients cleared (set to None), the forward
    pass and the loss under autocast for the mixed precisions (the weights stay float32), the
    backward pass, the optimizer's step. float16 scales the loss (``torch.amp.GradScaler``),
    as PyTorch's AMP recipe does; bfloat16 needs no scaling. ``forward`` replaces the module's
    call (the compiled module, :func:`compiled_forward`). The loss comes back detached, for the
    protocol to read once the step's time is taken."""
    call = forward or parts.forward
    scaler = (
        torch.amp.GradScaler(device.torch_name.split(":")[0])
        if precision == "mixed_float16"
        else None
    )

    def autocast() -> AbstractContextManager[Any]:
        if precision not in COMPUTE_DTYPES:
            return nullcontext()
        dtype = getattr(torch, COMPUTE_DTYPES[precision])
        return torch.autocast(device.torch_name.split(":")[0], dtype=dtype)  # type: ignore[no-any-return]

    def step(inputs: Any, targets: Any) -> Any:
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = parts.loss(call(inputs), targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.detach()

    return step


def first_step(parts: TorchParts, run: Callable[[], T]) -> T:
    """``run``, the module's first eager training step (before any clock), with what the
    user's code raises in it (forward, loss, backward, optimizer step) refused as one
    :class:`UserError` naming the module: a mistake in the file, like a builder that raises,
    so nothing is stored for it. Running out of memory passes through, stored as the device's
    answer (an ``oom`` run)."""
    from gpuscout.measure.user_code import first_line

    try:
        return run()
    except UserError:
        raise
    except Exception as exc:
        if is_oom(exc):
            raise
        raise UserError(
            f"--model {parts.label}: its first training step raised {type(exc).__name__}: "
            f"{first_line(exc)}",
            "fix the module's forward, loss(outputs, targets) (a scalar tensor) or "
            "make_optimizer; one step in Python (loss.backward(), optimizer.step()) shows the "
            "traceback. Nothing was measured or stored.",
        ) from None


def compiled_forward(torch: Any, parts: TorchParts) -> Callable[[Any], Any]:
    """The module's forward pass compiled by ``torch.compile`` (Inductor), called as the
    protocol calls the module (a tuple positionally, a dict by keyword). The compiled module
    shares the module's parameters, so the optimizer steps the weights it runs. Compilation
    happens on the first call."""
    compiled = torch.compile(parts.module)

    def forward(inputs: Any) -> Any:
        if isinstance(inputs, dict):
            return compiled(**inputs)
        if isinstance(inputs, tuple | list):
            return compiled(*inputs)
        return compiled(inputs)

    return forward


def broken_weights(torch: Any, module: Any) -> str | None:
    """Why training is broken if some float parameter or buffer holds NaN/Inf, else None: a
    NaN can vanish before it reaches the loss (see ``keras/weights.py``)."""
    from gpuscout.measure.loss_check import weights_text

    tensors = [t for t in (*module.parameters(), *module.buffers()) if t.is_floating_point()]
    try:
        with torch.no_grad():
            bad = sum(not bool(torch.isfinite(t).all()) for t in tensors)
    except Exception:  # an extra after a finished measurement: never lose the run to it
        return None
    return weights_text(bad, len(tensors)) if bad else None
