"""A captured PyTorch step's aten ops written as the HLO text ``predict/hlo_text.py`` parses,
so a user's PyTorch model is counted by the same cost model, kernels and calibration as every
other prediction (no torch here: the ops are plain data, ``aten_ops.py``).

Each aten op is one HLO instruction, as eager PyTorch launches one kernel an op:

- ``mm``, ``addmm``, ``bmm``, ``baddbmm`` are a ``dot`` with its batch and contracting dims (an
  ``addmm``'s bias is the GEMM's epilogue, as cuBLASLt runs it, and is not read apart);
- ``convolution`` is a ``convolution`` with its window and ``dim_labels``; its backward is the
  two convolutions cuDNN runs (the input's gradient: the gradient convolved with the weights,
  input-dilated by the stride; the weights' gradient: the input convolved with the gradient,
  labelled as XLA labels a backward-filter convolution) and the bias's gradient a ``reduce``,
  so ``conv_flops`` counts each as the convolution it is;
- a fused scaled-dot-product attention (forward or backward) is the fused attention custom
  call (``core/step_ir.py``), its queries and keys viewed as [batch, length, heads, size];
- reductions, norms, softmax, losses and pooling are a ``reduce`` (``reduce-window``,
  ``select-and-scatter``) reading their input once;
- data movement (copies, casts, concatenation, gathers) its HLO opcode, every other op an
  elementwise instruction (FLOPs: its output's elements), a list op (``_foreach_*``, a fused
  optimizer) one instruction over all its tensors, as ``multi_tensor_apply`` runs it;
- views, reshapes and expands are ``bitcast`` and ``broadcast`` (free: no kernel).

Forward ops are named under the model (``metadata={op_name="MODEL/..."}``), backward ops under
``autograd/`` (``step_ir.TORCH_BACKWARD``), so the saved activations are counted as for a
traced XLA step; the forward ops a checkpointed region recomputes in the backward pass under
``autograd/rematted_computation/`` (``RECOMPUTE``), as JAX names its rematerialized ones, so
they count as backward work and what they hand the backward as recomputed activations. Every
result nothing reads is in the ROOT tuple: eager PyTorch drops nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuscout.core.step_ir import CAUSAL, FUSED_ATTENTION_BACKWARD, FUSED_ATTENTION_FORWARD
from gpuscout.core.step_ir import TORCH_BACKWARD as BACKWARD_SCOPE
from gpuscout.measure.backends.torch.aten_ops import (
    CONVOLUTIONS,
    ELEMENTWISE,
    MATMULS,
    MOVEMENT,
    REDUCTIONS,
    SCATTERED,
    SKIPPED,
    VIEWS,
    WINDOWED,
    WRITE_ONLY,
    WRITES,
    AtenOp,
    TensorRef,
    base_name,
    is_attention,
)
from gpuscout.predict.hlo import REMATTED

# HLO opcodes an elementwise aten name must not take (they mean something else to the parser)
_RESERVED = frozenset(
    ["parameter", "constant", "tuple", "get-tuple-element", "reshape", "bitcast", "broadcast",
     "iota", "reduce", "reduce-window", "select-and-scatter", "dot", "convolution",
     "custom-call", "call", "while", "conditional", "after-all"]
)  # fmt: skip
RANDOM = frozenset(
    [
        "randn",
        "rand",
        "randint",
        "randn_like",
        "rand_like",
        "randint_like",
        "uniform_",
        "normal_",
        "random_",
        "bernoulli_",
        "randperm",
        "exponential_",
    ]
)
# The scope of a recomputed forward op (``capture.py``'s "recompute" phase)
RECOMPUTE = f"{BACKWARD_SCOPE}{REMATTED}".rstrip("/")
_GATHERS = frozenset(["embedding", "index_select", "gather", "index", "take", "masked_select"])


def to_hlo(ops: list[AtenOp], model_name: str) -> str:
    """The HLO module of the captured step ``ops``, its forward ops named under
    ``model_name``."""
    writer = _Writer(model_name)
    for op in ops:
        writer.add(op)
    return writer.text()


@dataclass
class _Writer:
    model_name: str
    lines: list[str] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)  # tensor key -> its instruction
    types: dict[str, str] = field(default_factory=dict)  # instruction -> its result type
    # instructions an op reads (a result read through get-tuple-element is not: a tuple whose
    # parts are read is in the ROOT tuple too, harmlessly, so none is lost)
    used: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)
    params: int = 0
    count: int = 0

    def text(self) -> str:
        sinks = [n for n in self.types if n not in self.used and n not in self.free]
        root = ", ".join(f"{self.types[n]} %{n}" for n in sinks)
        shape = "(" + ", ".join(self.types[n] for n in sinks) + ")"
        body = [*self.lines, f"  ROOT %root = {shape} tuple({root})"]
        return "\n".join(["HloModule torch_step", "", "ENTRY %main () -> () {", *body, "}", ""])

    def _new(self, stem: str) -> str:
        self.count += 1
        return f"{stem}.{self.count}"

    def operand(self, t: TensorRef) -> str:
        """``TYPE %name`` of a tensor read; one no op produced is a parameter."""
        name = self.names.get(t.key)
        if name is None:
            name = f"param.{self.params}"
            self.lines.append(f"  %{name} = {t.hlo_type} parameter({self.params})")
            self.types[name] = t.hlo_type
            self.free.add(name)
            self.params += 1
            self.names[t.key] = name
        self.used.add(name)
        return f"{t.hlo_type} %{name}"

    def emit(
        self, opcode: str, result: str, reads: list[str], attrs: str, op: AtenOp, free: bool = False
    ) -> str:
        name = self._new(re.sub(r"[^a-z0-9]+", "-", opcode))
        scope = {"forward": self.model_name, "backward": BACKWARD_SCOPE,
                 "recompute": f"{RECOMPUTE}/{self.model_name}"}.get(op.phase, op.phase)  # fmt: skip
        meta = f'metadata={{op_name="{scope}/aten.{op.name}"}}'
        tail = ", ".join(x for x in (attrs, meta) if x)
        self.lines.append(f"  %{name} = {result} {opcode}({', '.join(reads)}), {tail}")
        self.types[name] = result
        if free:
            self.free.add(name)
        return name

    def bind(self, name: str, outputs: list[TensorRef], op: AtenOp) -> None:
        """``outputs`` are the results of instruction ``name`` (a tuple of them, for several)."""
        if len(outputs) == 1:
            self.names[outputs[0].key] = name
            return
        for i, t in enumerate(outputs):
            part = self.emit("get-tuple-element", t.hlo_type, [f"{self.types[name]} %{name}"],
                             f"index={i}", op, free=True)  # fmt: skip
            self.names[t.key] = part

    def op(self, opcode: str, op: AtenOp, reads: list[TensorRef], writes: list[TensorRef],
           attrs: str = "") -> None:  # fmt: skip
        if not writes:
            return
        result = writes[0].hlo_type if len(writes) == 1 else _tuple(writes)
        self.bind(self.emit(opcode, result, [self.operand(t) for t in reads], attrs, op),
                  writes, op)  # fmt: skip

    def add(self, op: AtenOp) -> None:
        name, base = op.name, base_name(op.name)
        outputs = [t for t in op.outputs if t is not None]
        if name in SKIPPED:
            for t, src in zip(outputs, op.tensors(), strict=False):  # an alias (detach)
                if src.key in self.names:
                    self.names[t.key] = self.names[src.key]
            return
        if name in VIEWS:
            self._view(op, outputs)
        elif name in MATMULS:
            self._matmul(op, outputs)
        elif name in CONVOLUTIONS:
            self._convolution(op, outputs)
        elif name == "convolution_backward":
            self._convolution_backward(op)
        elif is_attention(name):
            self._attention(op, outputs)
        elif name in REDUCTIONS:
            self.op("reduce", op, op.tensors(), outputs)
        elif name in WINDOWED:
            self.op("reduce-window", op, op.tensors(), outputs)
        elif name in SCATTERED:
            self.op("select-and-scatter", op, op.tensors(), outputs)
        elif base in WRITE_ONLY:
            writes = outputs or _written(op)
            self.op("rng" if base in RANDOM else "copy", op, [], writes)
        else:
            self._elementwise(op, outputs, base)

    def _view(self, op: AtenOp, outputs: list[TensorRef]) -> None:
        source = op.tensors()[0]
        opcode = "broadcast" if op.name.startswith("expand") else "bitcast"
        for t in outputs:
            read = self.operand(source)
            self.names[t.key] = self.emit(opcode, t.hlo_type, [read], "", op, free=True)

    def _matmul(self, op: AtenOp, outputs: list[TensorRef]) -> None:
        tensors = op.tensors()
        lhs, rhs = tensors[-2], tensors[-1]  # addmm / baddbmm / addmv: the bias comes first
        if op.name in ("mm", "addmm", "_addmm_activation", "bmm", "baddbmm") or len(
            rhs.shape
        ) >= 2:  # fmt: skip
            batch = list(range(len(lhs.shape) - 2))
            contract = (len(lhs.shape) - 1, len(rhs.shape) - 2)
        else:  # mv, dot: the vector's one dim
            batch, contract = [], (len(lhs.shape) - 1, 0)
        dims = f"lhs_contracting_dims={{{contract[0]}}}, rhs_contracting_dims={{{contract[1]}}}"
        if batch:
            joined = ",".join(map(str, batch))
            dims = f"lhs_batch_dims={{{joined}}}, rhs_batch_dims={{{joined}}}, {dims}"
        self.op("dot", op, [lhs, rhs], outputs, dims)

    def _convolution(self, op: AtenOp, outputs: list[TensorRef]) -> None:
        x, w = op.tensors()[:2]
        a = _conv_args(op)
        spatial = len(w.shape) - 2
        if a["transposed"]:  # as the gradient of the convolution it transposes
            window = _window(w.shape[2:], a, lhs_dilate=True)
            rhs = "io"
        else:
            window, rhs = _window(w.shape[2:], a), "oi"
        labels = f"dim_labels={_labels('bf', spatial)}_{_labels(rhs, spatial)}->" + _labels(
            "bf", spatial
        )
        self.op("convolution", op, [x, w], outputs,
                f"{window}, {labels}, feature_group_count={a['groups']}")  # fmt: skip

    def _convolution_backward(self, op: AtenOp) -> None:
        grad, x, w = (op.args[k] for k in ("grad_output", "input", "weight"))
        a = _conv_args(op)
        spatial = len(w.shape) - 2
        grad_input, grad_weight, grad_bias = (list(op.outputs) + [None] * 3)[:3]
        bf, fb = _labels("bf", spatial), _labels("fb", spatial)
        groups = a["groups"]
        if grad_input is not None:
            if a["transposed"]:  # a strided convolution of the gradient
                window, rhs = _window(w.shape[2:], a), _labels("oi", spatial)
            else:  # the gradient, input-dilated by the stride, with the weights
                window, rhs = _window(w.shape[2:], a, lhs_dilate=True), _labels("io", spatial)
            self.op(
                "convolution",
                op,
                [grad, w],
                [grad_input],
                f"{window}, dim_labels={bf}_{rhs}->{bf}, feature_group_count={groups}",
            )
        if grad_weight is not None:  # over every image and pixel: batch_group_count
            lhs, rhs = (grad, x) if a["transposed"] else (x, grad)
            size = "x".join(map(str, rhs.shape[2:]))
            dilate = "x".join(map(str, a["stride"]))
            self.op("convolution", op, [lhs, rhs], [grad_weight],
                    f"window={{size={size} rhs_dilate={dilate}}}, dim_labels={fb}_"
                    f"{_labels('io', spatial)}->{fb}, batch_group_count={groups}")  # fmt: skip
        if grad_bias is not None:
            self.op("reduce", op, [grad], [grad_bias], "dimensions={0}")

    def _attention(self, op: AtenOp, outputs: list[TensorRef]) -> None:
        backward = "backward" in op.name
        q, k, v = (op.args[n] for n in ("query", "key", "value"))
        rest = [op.args[n] for n in ("out", "grad_out", "logsumexp") if n in op.args]
        others = [t for t in op.tensors() if t not in (q, k, v, *rest)]  # a mask, a bias
        reads = [self._heads_last(t, op) for t in (q, k, v)]
        reads += [self.operand(t) for t in [*rest, *others] if isinstance(t, TensorRef)]
        target = FUSED_ATTENTION_BACKWARD if backward else FUSED_ATTENTION_FORWARD
        target += CAUSAL if op.args.get("is_causal") else ""
        result = outputs[0].hlo_type if len(outputs) == 1 else _tuple(outputs)
        name = self.emit("custom-call", result, reads, f'custom_call_target="{target}"', op)
        self.bind(name, outputs, op)

    def _heads_last(self, t: TensorRef, op: AtenOp) -> str:
        """``t`` ([batch, heads, length, size]) viewed as the fused attention call reads it:
        [batch, length, heads, size] (a view: nothing moves)."""
        read = self.operand(t)
        shape = t.shape if len(t.shape) == 4 else (t.shape[0], 1, *t.shape[-2:])
        viewed = TensorRef(-1, t.dtype, (shape[0], shape[2], shape[1], shape[3])).hlo_type
        name = self.emit("bitcast", viewed, [read], "", op, free=True)
        return f"{viewed} %{name}"

    def _elementwise(self, op: AtenOp, outputs: list[TensorRef], base: str) -> None:
        writes = outputs or _written(op)
        reads = op.tensors()
        if op.name in ("copy_", "_foreach_copy_"):  # reads its source, writes over the first
            first = op.arg(0)
            dropped = {x.key for x in (first if isinstance(first, list) else [first])}
            reads = [t for t in reads if t.key not in dropped]
        if base in _GATHERS:  # an index read sparsely: the table's rows the result holds
            reads = [t for t in reads if t.dtype in ("s64", "s32", "pred", "u8")]
        opcode = MOVEMENT.get(base) or ELEMENTWISE.get(base) or _opcode(base)
        if opcode == "copy" and reads and writes and reads[0].dtype != writes[0].dtype:
            opcode = "convert"
        self.op(opcode, op, reads, writes)


def _written(op: AtenOp) -> list[TensorRef]:
    """What an in-place op that returns nothing wrote: its first argument (a tensor or a list
    of them), or the lists a fused optimizer updates (``aten_ops.WRITES``)."""
    found: list[TensorRef] = []
    for position in WRITES.get(op.name, (0,)):
        a = op.arg(position)
        found.extend(x for x in (a if isinstance(a, list | tuple) else [a])
                     if isinstance(x, TensorRef))  # fmt: skip
    return found


def _opcode(base: str) -> str:
    """An elementwise aten name as an HLO-style opcode (``gelu_backward`` -> gelu-backward)."""
    opcode = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-") or "elementwise"
    if not opcode[0].isalpha():
        opcode = f"aten-{opcode}"
    return f"aten-{opcode}" if opcode in _RESERVED else opcode


def _tuple(ts: list[TensorRef]) -> str:
    return "(" + ", ".join(t.hlo_type for t in ts) + ")"


def _labels(first: str, spatial: int) -> str:
    return first + "".join(str(i) for i in range(spatial))


def _conv_args(op: AtenOp) -> dict[str, Any]:
    """Stride, padding, dilation (one value per spatial dim), transposed and groups."""
    w = op.args["weight"]
    spatial = len(w.shape) - 2

    def per_dim(value: Any) -> list[int]:
        values = list(value) if isinstance(value, list | tuple) else [value]
        return [int(v) for v in values] * (spatial if len(values) == 1 else 1)

    return {
        "stride": per_dim(op.args.get("stride", 1)),
        "padding": per_dim(op.args.get("padding", 0)),
        "dilation": per_dim(op.args.get("dilation", 1)),
        "transposed": bool(op.args.get("transposed", False)),
        "groups": int(op.args.get("groups", 1)),
    }


def _window(kernel: tuple[int, ...], a: dict[str, Any], lhs_dilate: bool = False) -> str:
    """HLO's window: the kernel's size, and the stride (forward) or an input dilated by it
    (the input's gradient, and a transposed convolution's forward)."""
    parts = [f"size={'x'.join(map(str, kernel))}"]
    if lhs_dilate and any(s > 1 for s in a["stride"]):
        parts.append(f"lhs_dilate={'x'.join(map(str, a['stride']))}")
    elif not lhs_dilate:
        parts.append(f"stride={'x'.join(map(str, a['stride']))}")
    parts.append("pad=" + "x".join(f"{p}_{p}" for p in a["padding"]))
    if any(d > 1 for d in a["dilation"]):
        parts.append(f"rhs_dilate={'x'.join(map(str, a['dilation']))}")
    return "window={" + " ".join(parts) + "}"


__all__ = ["to_hlo"]
