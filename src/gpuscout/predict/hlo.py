"""The cost of a training step, read from XLA's HLO of the compiled ``tf.function``.

HLO is the program XLA actually compiles, with every shape resolved, so counting it counts
what the hardware is asked to do — forward, backward and optimizer update — rather than what a
formula assumes. This module reads HLO *text* (parsed by ``hlo_text.py``) and needs no
TensorFlow; the text comes from ``measure/backends/tensorflow/hlo.py``
(``experimental_get_compiler_ir(stage="hlo")``) or ``measure/backends/jax/hlo.py``.

Op classes, as the roofline model uses them:

- ``matmul``: ``dot`` and ``convolution`` (tensor-core eligible). FLOPs = 2 x output elements x
  the contracted size (for a convolution: window size x input features per group).
- ``reduction``: ``reduce``, ``reduce-window``, ``select-and-scatter``. FLOPs = input elements.
- ``elementwise``: arithmetic and data movement (``add``, ``convert``, ``copy``,
  ``transpose``, ...). FLOPs = output elements for arithmetic, 0 for movement.
- free: ``parameter``, ``constant``, ``reshape``, ``broadcast``, tuples: no work of their own.

Bytes are an estimate of memory traffic *after* fusion, which this unoptimised HLO does not
show: matmuls and reductions read their operands and write their result; an elementwise op
writes its result unless XLA's GPU fusion keeps it out of memory (``hlo_text.fusion_targets``:
a single elementwise or reduce consumer, or several that each recompute a cheap producer when
that reads less), and its inputs come from producers already counted. No fitted factor scales
time to absorb an error here: a software stack's traffic factor scales these bytes, within
x0.67..x1.5 (``calibrate.py``).

The same module is also cut into the *kernels* the GPU runs (``StepCost.kernels``), because a
step's time is a sum over kernels, each bounded by its own shape, not by the class totals. The
grouping mirrors the fusion estimate above, so both views agree on what is fused:

- one ``matmul`` kernel per ``dot`` (GEMM view from its batch, contracting and free dims) and
  one ``conv`` kernel per ``convolution`` (implicit GEMM from ``dim_labels``: m = output batch x
  output spatial, n = output features per group, k = window x input features per group, batch
  = groups; backward-filter and backward-input convolutions are convolutions with other labels,
  so the same rule gives their GEMMs). FLOPs and bytes are exactly the class's.
- one ``reduction`` kernel per reduce, with the elementwise ops fused into it (XLA's input
  fusion); sibling reductions of one tensor (a norm's mean and variance) are one kernel (XLA's
  multi-output fusion), as the class count reads that tensor once.
- one ``elementwise`` kernel per loop fusion: an elementwise op with its fused producers.

A fused kernel's bytes are what enters it from outside (looking through reshapes and
broadcasts to the tensor actually read) plus what it writes. The class totals count writes
only, so an elementwise kernel's bytes exceed its class share by its reads. FLOPs add up
exactly: the sum over all kernels equals the sum over the classes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gpuscout.predict.hlo_text import (
    DESCEND,
    FREE,
    MOVEMENT,
    REDUCTION,
    REF,
    Instr,
    array_shapes,
    conv_flops,
    dot_flops,
    dtype_of,
    element_count,
    fusion_targets,
    int_attr,
    live_instrs,
    nbytes,
    operand_text,
    parse_module,
)
from gpuscout.predict.kernels import Kernel, merge

CLASSES = ("matmul", "elementwise", "reduction")


@dataclass
class StepCost:
    """FLOPs and bytes of one step, by op class."""

    flops: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0.0))
    bytes: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0.0))
    ops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    # Forward-pass results (op names under the model's name) that the backward pass reads:
    # the activations training must keep in memory between the two passes.
    saved_activation_bytes: float = 0.0
    # Every kernel in step order, unmerged: two traces of one model at two batch sizes give
    # lists that align one to one, which is how a profile learns how each kernel scales.
    raw_kernels: list[Kernel] = field(default_factory=list)

    @property
    def kernels(self) -> list[Kernel]:
        """The step's kernels, identical ones kept once with a count."""
        return merge(self.raw_kernels)


def step_cost(text: str, forward_scope: str | None = None) -> StepCost:
    """FLOPs and estimated bytes of the step an HLO module describes.

    ``forward_scope``: the model's name, which prefixes the op names of its forward pass.
    """
    entry, comps = parse_module(text)
    cost = StepCost()
    scope = f'op_name="{forward_scope}' if forward_scope else None
    _add(cost, comps, entry, set(), scope)
    return cost


def _add(
    cost: StepCost,
    comps: dict[str, list[Instr]],
    name: str,
    seen: set[str],
    scope: str | None,
) -> None:
    if name in seen:  # a computation is counted once even if called from several places
        return
    seen.add(name)
    live = live_instrs(comps.get(name, []))
    fusable = _fused_into_consumer(live)
    cost.raw_kernels.extend(_kernels(live))
    reduced: set[str] = set()
    for ins in live:
        if ins.opcode in DESCEND:
            for called in re.findall(r"(?:to_apply|body|condition|branch_computations=\{?|"
                                     r"true_computation|false_computation)=?%?([\w.\-]+)",
                                     ins.rest):  # fmt: skip
                _add(cost, comps, called, seen, scope)
            continue
        if ins.opcode in FREE:
            continue
        operands = operand_text(ins.rest)
        out_bytes = nbytes(ins.shape)
        if ins.opcode == "dot":
            cls, flops, moved = "matmul", dot_flops(ins, operands), nbytes(operands) + out_bytes
        elif ins.opcode == "convolution":
            cls, flops, moved = "matmul", conv_flops(ins, operands), nbytes(operands) + out_bytes
        elif ins.opcode in REDUCTION:  # one operation per element of the reduced input
            data = array_shapes(operands)[0][1]
            source = (REF.findall(operands) or [ins.name])[0]
            # Sibling reductions of one tensor (a norm's mean and variance) share one read.
            read = 0 if source in reduced else nbytes(operands)
            reduced.add(source)
            cls, flops, moved = "reduction", float(math.prod(data)), read + out_bytes
        else:
            flops = 0.0 if ins.opcode in MOVEMENT else float(element_count(ins.shape))
            fused = fusable.get(ins.name, False)
            cls, moved = "elementwise", 0 if fused else out_bytes
        cost.flops[cls] += flops
        cost.bytes[cls] += moved
        cost.ops[cls] += 1
    if scope:
        cost.saved_activation_bytes += _saved_bytes(live, scope)


def _fused_into_consumer(instrs: list[Instr]) -> dict[str, bool]:
    """Elementwise results XLA keeps in registers: a single consumer that is itself
    elementwise (loop fusion) or reduce (input fusion), looking through reshapes, or several
    such consumers that each recompute a cheap one (``fusion_targets``). Results that leave
    the step (the tuple of outputs: updated weights, the loss) are written to memory."""
    targets = fusion_targets(instrs)
    return {ins.name: ins.name in targets for ins in instrs}


def _dot_kernel(ins: Instr, operands: str) -> Kernel:
    """A dot as a (batched) GEMM: batch dims, then the free dims of each side, contracted."""
    (dtype, lhs), (_, rhs) = array_shapes(operands)[:2]
    lhs_batch, lhs_contract = (
        int_attr(ins.rest, "lhs_batch_dims"),
        int_attr(ins.rest, "lhs_contracting_dims"),
    )
    rhs_batch, rhs_contract = (
        int_attr(ins.rest, "rhs_batch_dims"),
        int_attr(ins.rest, "rhs_contracting_dims"),
    )
    lhs_free = [d for i, d in enumerate(lhs) if i not in lhs_batch and i not in lhs_contract]
    rhs_free = [d for i, d in enumerate(rhs) if i not in rhs_batch and i not in rhs_contract]
    return Kernel(
        op="matmul",
        flops=dot_flops(ins, operands),
        bytes=nbytes(operands) + nbytes(ins.shape),
        dtype=dtype,
        batch=max(1, math.prod(lhs[i] for i in lhs_batch)),
        m=math.prod(lhs_free),
        n=math.prod(rhs_free),
        k=math.prod(lhs[i] for i in lhs_contract),
        elements=element_count(ins.shape),
    )


def _conv_kernel(ins: Instr, operands: str) -> Kernel:
    """A convolution as the implicit GEMM cuDNN runs, read from its ``dim_labels``: m = output
    batch x output spatial, n = output features per group, k = window taps x input features
    per group (taps on an input-dilated gradient's inserted zeros do no work), batch = groups.
    A backward-filter convolution labels the images as features and the channels as batch,
    so the same rule gives its GEMM: m = input channels x taps, k = images x pixels."""
    (dtype, lhs), _ = array_shapes(operands)[:2]
    out = array_shapes(ins.shape)[0][1]
    labels = re.search(r"dim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)", ins.rest)
    lhs_labels, out_labels = (labels.group(1), labels.group(3)) if labels else ("b01f", "b01f")
    groups = re.search(r"feature_group_count=(\d+)", ins.rest)
    g = int(groups.group(1)) if groups else 1
    flops = conv_flops(ins, operands)
    out_features = out[out_labels.index("f")]
    m = math.prod(d for i, d in enumerate(out) if out_labels[i] != "f")
    n = max(1, out_features // g)
    return Kernel(
        op="conv",
        flops=flops,
        bytes=nbytes(operands) + nbytes(ins.shape),
        dtype=dtype,
        batch=g,
        m=m,
        n=n,
        k=max(1, round(flops / (2.0 * g * m * n))) if m else lhs[lhs_labels.index("f")] // g,
        elements=element_count(ins.shape),
    )


def _kernels(live: list[Instr]) -> list[Kernel]:
    """The kernels of one computation, in program order (see the module docstring)."""
    by_name = {i.name: i for i in live}
    targets = fusion_targets(live)
    first_reduce: dict[str, str] = {}  # reduced tensor -> the reduce whose kernel reads it
    sibling: dict[str, str] = {}  # a reduce -> the first reduce of the same tensor
    for ins in live:
        if ins.opcode in REDUCTION:
            source = (REF.findall(operand_text(ins.rest)) or [ins.name])[0]
            sibling[ins.name] = first_reduce.setdefault(source, ins.name)
    roots_of: dict[str, list[str]] = {}

    def roots(name: str) -> list[str]:
        """The kernels an instruction runs in: its own, or (fused) those of its consumers,
        several where a cheap producer is recomputed in each (``fusion_targets``)."""
        if name not in roots_of:
            found = [r for c in targets[name] for r in roots(c)] if name in targets else [name]
            roots_of[name] = list(dict.fromkeys(sibling.get(r, r) for r in found))
        return roots_of[name]

    groups: dict[str, list[Instr]] = {}  # root (or first sibling reduce) -> its members
    owner: dict[str, str] = {}  # the kernel whose FLOPs count a recomputed producer's work
    for ins in reversed(live):  # consumers first, so a producer's roots are known
        if ins.opcode in FREE or ins.opcode in DESCEND:
            continue
        mine = roots(ins.name)
        owner[ins.name] = mine[0]
        for root in mine:
            groups.setdefault(root, []).append(ins)
    # A fused producer appears before its root: order kernels by their root's position.
    order = {i.name: n for n, i in enumerate(live)}
    kernels = []
    for root in sorted(groups, key=order.__getitem__):
        members = groups[root][::-1]
        head = by_name[root]
        if head.opcode == "dot":
            kernels.append(_dot_kernel(head, operand_text(head.rest)))
        elif head.opcode == "convolution":
            kernels.append(_conv_kernel(head, operand_text(head.rest)))
        else:
            counted = {i.name for i in members if owner[i.name] == root}
            kernels.append(_fused_kernel(head, members, by_name, counted))
    return kernels


def _fused_kernel(
    head: Instr, members: list[Instr], by_name: dict[str, Instr], counted: set[str]
) -> Kernel:
    """A loop fusion (head elementwise) or an input fusion (head a reduce, with its siblings):
    reads what enters from outside the group, writes the non-fused results. Its FLOPs are
    those of the members in ``counted``: a producer recomputed in several kernels counts in
    one, so the kernels' FLOPs add up to the step's."""
    inside = {i.name for i in members}
    read: dict[str, int] = {}
    flops = 0.0
    for ins in members:
        for ref in set(REF.findall(operand_text(ins.rest))):
            src = by_name.get(ref)
            while (
                src is not None
                and src.name not in inside
                and src.opcode in ("reshape", "bitcast", "broadcast")
            ):
                refs = REF.findall(operand_text(src.rest))
                src = by_name.get(refs[0]) if refs else None
            if src is not None and src.name not in inside:
                read[src.name] = 0 if src.opcode == "iota" else nbytes(src.shape)
        if ins.name not in counted:
            continue
        if ins.opcode in REDUCTION:
            flops += float(math.prod(array_shapes(operand_text(ins.rest))[0][1]))
        elif ins.opcode not in MOVEMENT:
            flops += float(element_count(ins.shape))
    if head.opcode in REDUCTION:
        written = sum(nbytes(i.shape) for i in members if i.opcode in REDUCTION)
        data = array_shapes(operand_text(head.rest))[0]
        return Kernel(
            op="reduction",
            flops=flops,
            bytes=sum(read.values()) + written,
            dtype=data[0],
            elements=math.prod(data[1]),
        )
    return Kernel(
        op="elementwise",
        flops=flops,
        bytes=sum(read.values()) + nbytes(head.shape),
        dtype=dtype_of(head.shape),
        elements=element_count(head.shape),
    )


# How a gradient op is named: TensorFlow's GradientTape, JAX's transpose of the forward's jvp
_GRADIENT_MARKS = ('op_name="gradient_tape', "/transpose(jvp(")


def _saved_bytes(instrs: list[Instr], scope: str) -> float:
    """Bytes of forward results that gradient ops read (through reshapes and the like)."""
    by_name = {i.name: i for i in instrs}

    def source(name: str) -> Instr | None:
        ins = by_name.get(name)
        while ins is not None and ins.opcode in ("reshape", "bitcast", "copy", "convert"):
            refs = REF.findall(operand_text(ins.rest))
            ins = by_name.get(refs[0]) if refs else None
        return ins

    saved: dict[str, int] = {}
    for ins in instrs:
        if not any(mark in ins.rest for mark in _GRADIENT_MARKS):
            continue
        for ref in REF.findall(operand_text(ins.rest)):
            src = source(ref)
            if src is not None and scope in src.rest and src.opcode not in FREE:
                saved[src.name] = nbytes(src.shape)
    return float(sum(saved.values()))
