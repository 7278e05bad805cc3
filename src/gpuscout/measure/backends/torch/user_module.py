"""A user's own PyTorch model: ``--model FILE.py:build`` where ``build()`` returns a
``torch.nn.Module``, and what its training step needs, read by one small protocol.

The protocol (``docs/torch.md`` says it to users; ``examples/models/torch_cnn.py`` follows it):

- ``build()`` returns the ``torch.nn.Module``, on the CPU, in float32; gpuscout moves it to the
  device and applies the precision (autocast), so the builder stays device-free.
- ``module.example_batch(batch_size)`` (required) returns ``(inputs, targets)`` for one batch
  of that size, on the CPU: ``inputs`` a tensor, a tuple of tensors (passed positionally) or a
  dict of them (passed by keyword); ``targets`` a tensor (or anything ``loss`` takes).
- ``module.loss(outputs, targets)`` (optional) returns the scalar loss. Without it:
  ``cross_entropy`` for integer targets, ``mse_loss`` for floating ones (said as assumed).
- ``module.make_optimizer(parameters)`` (optional) returns a ``torch.optim.Optimizer``.
  Without it: ``torch.optim.AdamW(lr=1e-3)`` (said as assumed).

Nothing here imports Keras: a plain PyTorch model is measured and traced without it. What is
wrong with the user's code before the first step is one :class:`UserError` naming the file,
as for a Keras builder (``measure/user_code.py`` runs both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuscout.core.errors import UserError, is_oom
from gpuscout.measure.user_code import call_function
from gpuscout.measure.user_spec import FunctionSpec

PROTOCOL_FIX = (
    "give the module an example_batch(batch_size) method returning (inputs, targets); "
    "see docs/torch.md for the protocol"
)
DEFAULT_OPTIMIZER = "torch.optim.AdamW(lr=1e-3)"


@dataclass
class TorchParts:
    """What one training step of the user's module needs, loaded and checked (on the CPU)."""

    label: str  # FILE.py:FUNCTION, for messages
    module: Any  # torch.nn.Module
    inputs: Any  # a tensor, a tuple of them, or a dict of them
    targets: Any
    loss: Callable[[Any, Any], Any]
    make_optimizer: Callable[[Any], Any]
    assumptions: list[str] = field(default_factory=list)

    def forward(self, inputs: Any | None = None) -> Any:
        """The module called on ``inputs`` (default: the example batch) as the protocol says:
        a tuple positionally, a dict by keyword."""
        given = self.inputs if inputs is None else inputs
        if isinstance(given, dict):
            return self.module(**given)
        if isinstance(given, tuple | list):
            return self.module(*given)
        return self.module(given)

    def require_trainable(self) -> None:
        """UserError when no parameter of the module requires a gradient: there is no training
        step, and the optimizer's own complaint (an empty parameter list) would blame a
        make_optimizer the module may not have. Checked by every training step (bench, soak,
        the capture for predict), not by a forward pass (inference needs no trainable
        weight)."""
        if not any(p.requires_grad for p in self.module.parameters()):
            raise UserError(
                f"--model {self.label}: the {type(self.module).__name__} it returned has no "
                "trainable parameter (none with requires_grad), so it has no training step.",
                "give it torch.nn.Parameter weights (a registered buffer is not trained), or "
                "predict serving with --mode inference.",
            )


def load(spec: FunctionSpec, batch: int) -> TorchParts:
    """The user's module and one example batch of ``batch`` samples, checked against the
    protocol; UserError for anything the user must fix (OOM passes through, to be stored)."""
    import torch

    label = f"{spec.path}:{spec.function}"
    module = call_function(spec, "--model")
    if not isinstance(module, torch.nn.Module):
        raise UserError(
            f"--model {label} returned {type(module).__name__}, not a torch.nn.Module.",
            "make build() return the model (a torch.nn.Module); see docs/torch.md.",
        )
    example = getattr(module, "example_batch", None)
    if not callable(example):
        raise UserError(
            f"--model {label}: the {type(module).__name__} it returned has no "
            "example_batch(batch_size) method, so gpuscout cannot make a batch for it.",
            PROTOCOL_FIX + ".",
        )
    batch_pair = _called(example, label, "example_batch", batch)
    if not isinstance(batch_pair, tuple | list) or len(batch_pair) != 2:
        raise UserError(
            f"--model {label}: example_batch({batch}) returned "
            f"{type(batch_pair).__name__}, not a pair (inputs, targets).",
            "return (inputs, targets); see docs/torch.md.",
        )
    inputs, targets = batch_pair
    _check_batch(torch, inputs, label, batch)
    notes: list[str] = []
    loss = getattr(module, "loss", None)
    if not callable(loss):
        loss, said = _default_loss(torch, targets, label)
        notes.append(said)
    make = getattr(module, "make_optimizer", None)
    if not callable(make):

        def make(parameters: Any) -> Any:
            return torch.optim.AdamW(parameters, lr=1e-3)

        notes.append(
            f"optimizer: {DEFAULT_OPTIMIZER}, gpuscout's choice (the module has no "
            "make_optimizer(parameters)); its state is 2 float32 values per weight"
        )
    return TorchParts(label, module, inputs, targets, loss, make, notes)


def _called(fn: Callable[..., Any], label: str, name: str, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        if is_oom(exc):
            raise
        raise UserError(
            f"--model {label}: {name}({', '.join(map(str, args))}) raised "
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc) else ''}",
            f"fix {name}; calling it in Python shows the traceback.",
        ) from None


def _tensors(torch: Any, inputs: Any) -> list[Any]:
    if isinstance(inputs, dict):
        return [v for v in inputs.values() if isinstance(v, torch.Tensor)]
    if isinstance(inputs, tuple | list):
        return [v for v in inputs if isinstance(v, torch.Tensor)]
    return [inputs] if isinstance(inputs, torch.Tensor) else []


def _check_batch(torch: Any, inputs: Any, label: str, batch: int) -> None:
    """Inputs must hold tensors whose first dimension is the batch asked for: a fixed-size
    example would be measured at the wrong batch, and every per-sample figure be wrong."""
    tensors = _tensors(torch, inputs)
    if not tensors:
        raise UserError(
            f"--model {label}: example_batch({batch}) gave inputs of type "
            f"{type(inputs).__name__}, holding no torch.Tensor.",
            "return a tensor, a tuple of tensors or a dict of tensors as inputs.",
        )
    sizes = {int(t.shape[0]) if t.dim() else 0 for t in tensors}
    if sizes != {batch}:
        raise UserError(
            f"--model {label}: example_batch({batch}) gave inputs whose first dimension is "
            f"{', '.join(str(s) for s in sorted(sizes))}, not the batch size {batch}.",
            "make example_batch(batch_size) return batch_size samples.",
        )


def _default_loss(torch: Any, targets: Any, label: str) -> tuple[Callable[[Any, Any], Any], str]:
    functional = torch.nn.functional
    if not isinstance(targets, torch.Tensor):
        raise UserError(
            f"--model {label}: its targets are {type(targets).__name__}, and it has no "
            "loss(outputs, targets) method to take them.",
            "give the module a loss(outputs, targets) method, or return a tensor of targets.",
        )
    if targets.dtype.is_floating_point:
        return (
            lambda out, y: functional.mse_loss(out.float(), y.float()),
            "loss: mean squared error on float32 outputs, gpuscout's choice for floating "
            "targets (the module has no loss(outputs, targets))",
        )
    return (
        lambda out, y: functional.cross_entropy(out.float(), y),
        "loss: cross-entropy on float32 logits, gpuscout's choice for integer targets (the "
        "module has no loss(outputs, targets))",
    )
