"""The recorder of a captured PyTorch step: every aten op the dispatcher runs, with its
arguments' and results' shapes, as plain :class:`~.aten_ops.AtenOp` records.

Its own module because two captures share it: a plain module's step (``capture.py``) and a
Keras model's step on PyTorch (``live_capture.py``, ``ScoutCallback``). Importing it imports
torch (the recorder is a ``TorchDispatchMode``).
"""

from __future__ import annotations

from typing import Any

from gpuscout.measure.backends.torch.aten_ops import DTYPES, AtenOp, TensorRef


def nbytes(t: Any) -> int:
    """The bytes ``t`` holds (a fake tensor's too: its shape and dtype, no memory read)."""
    return int(t.numel()) * int(t.element_size())


def _recorder_base() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


class OpRecorder(_recorder_base()):  # type: ignore[misc]
    """Records every aten op dispatched while it is active (below autograd and autocast: the
    ops a GPU would run), in order, with the phase of the step it ran in."""

    def __init__(self, torch: Any) -> None:
        super().__init__()
        self.torch = torch
        self.ops: list[AtenOp] = []
        self.phase = "forward"
        self._held: list[Any] = []  # every tensor seen, so that no id is reused

    def ref(self, t: Any) -> TensorRef:
        self._held.append(t)
        return TensorRef(id(t), DTYPES.get(str(t.dtype), "f32"), tuple(int(s) for s in t.shape))

    def _value(self, v: Any) -> Any:
        if isinstance(v, self.torch.Tensor):
            return self.ref(v)
        if isinstance(v, list | tuple):
            return [self._value(x) for x in v]
        if v is None or isinstance(v, bool | int | float | str):
            return v
        return str(v)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        namespace, _, name = func._schema.name.partition("::")
        if namespace != "aten":
            return out
        phase = self.phase
        if phase == "backward" and self._recomputing():
            phase = "recompute"
        named: dict[str, Any] = {}
        for i, a in enumerate(func._schema.arguments):
            given = args[i] if i < len(args) else kwargs.get(a.name, a.default_value)
            named[a.name] = self._value(given)
        outputs: list[TensorRef | None] = []
        for o in out if isinstance(out, tuple | list) else [out]:
            if isinstance(o, list | tuple):
                outputs.extend(self.ref(x) for x in o if isinstance(x, self.torch.Tensor))
            else:
                outputs.append(self.ref(o) if isinstance(o, self.torch.Tensor) else None)
        self.ops.append(AtenOp(name, named, outputs, phase))
        return out

    def _recomputing(self) -> bool:
        """Inside the autograd engine with gradients on: a checkpointed region's forward run
        again (``torch.utils.checkpoint`` recomputes under ``enable_grad``), where the
        engine's own backward ops run with gradients off."""
        return bool(self.torch.is_grad_enabled()) and self.torch._C._current_graph_task_id() >= 0
