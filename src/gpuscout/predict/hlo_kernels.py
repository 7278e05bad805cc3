"""The kernels of a step's HLO: what the GPU launches after XLA's fusion, each with its work,
its memory traffic and its GEMM shape (``predict/hlo.py`` cuts a computation into them; the
grouping mirrors its fusion estimate, so both views agree on what is fused). No TensorFlow.
"""

from __future__ import annotations

import math
import re

from gpuscout.predict.hlo_text import (
    DESCEND,
    FREE,
    MOVEMENT,
    REDUCTION,
    REF,
    Instr,
    array_shapes,
    attention_gemm,
    conv_flops,
    dot_flops,
    dtype_of,
    element_count,
    fused_attention,
    fusion_targets,
    int_attr,
    nbytes,
    operand_text,
    read_of,
    written,
)
from gpuscout.predict.kernels import Kernel


def dot_kernel(ins: Instr, operands: str) -> Kernel:
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


def attention_kernel(ins: Instr, operands: str) -> Kernel:
    """A fused attention kernel (``hlo_text.attention_gemm``): tensor-core work in the GEMM
    view of its scores (batch x heads GEMMs of Lq x Lk), contracted over the depth that gives
    its FLOPs (the kernel model times a GEMM by its tiles, 2·m·n·k each), reading its operands
    and writing its results, nothing L x L."""
    flops, batch, m, n, _ = attention_gemm(ins, operands)
    k = max(1, round(flops / (2.0 * batch * m * n)))
    return Kernel(
        op="matmul",
        flops=flops,
        bytes=nbytes(operands) + nbytes(ins.shape),
        dtype=array_shapes(operands)[0][0],
        batch=batch,
        m=m,
        n=n,
        k=k,
        elements=element_count(ins.shape),
    )


def conv_kernel(ins: Instr, operands: str) -> Kernel:
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


def kernels(live: list[Instr]) -> list[Kernel]:
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
            kernels.append(dot_kernel(head, operand_text(head.rest)))
        elif head.opcode == "convolution":
            kernels.append(conv_kernel(head, operand_text(head.rest)))
        elif fused_attention(head):
            kernels.append(attention_kernel(head, operand_text(head.rest)))
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
        for position, ref in enumerate(REF.findall(operand_text(ins.rest))):
            src = by_name.get(ref)
            while (
                src is not None
                and src.name not in inside
                and src.opcode in ("reshape", "bitcast", "broadcast")
            ):
                refs = REF.findall(operand_text(src.rest))
                src = by_name.get(refs[0]) if refs else None
            if src is not None and src.name not in inside:
                read[src.name] = max(read.get(src.name, 0), read_of(ins, position, src))
        if ins.name not in counted:
            continue
        if ins.opcode in REDUCTION:
            flops += float(math.prod(array_shapes(operand_text(ins.rest))[0][1]))
        elif ins.opcode not in MOVEMENT:
            flops += float(element_count(ins.shape))
    if head.opcode in REDUCTION:
        results = sum(nbytes(i.shape) for i in members if i.opcode in REDUCTION)
        data = array_shapes(operand_text(head.rest))[0]
        return Kernel(
            op="reduction",
            flops=flops,
            bytes=sum(read.values()) + results,
            dtype=data[0],
            elements=math.prod(data[1]),
        )
    out = written(head)
    return Kernel(
        op="elementwise",
        flops=flops,
        bytes=sum(read.values()) + nbytes(out),
        dtype=dtype_of(out),
        elements=element_count(out),
    )


def op_by_op_kernels(live: list[Instr]) -> list[Kernel]:
    """The kernels of one computation run op by op, as eager PyTorch runs a model written as
    Python tensor ops (Hugging Face's Llama and PEFT's LoRA without ``torch.compile``): every
    HLO op that does work is its own kernel, reading its operands from memory and writing its
    result, nothing fused. A matmul, convolution or fused attention call is the same library
    kernel as in ``kernels``; reshapes, bitcasts and broadcasts stay free (views and strides in
    PyTorch), so a broadcast operand is read as the tensor behind it.

    An upper bound on what an eager stack moves where it calls library-fused ops instead (a
    cuDNN batch norm, APEX's fused layer norm): use it only for code written op by op."""
    by_name = {i.name: i for i in live}
    out = []
    for ins in live:
        if ins.opcode in FREE or ins.opcode in DESCEND:
            continue
        operands = operand_text(ins.rest)
        if ins.opcode == "dot":
            out.append(dot_kernel(ins, operands))
        elif ins.opcode == "convolution":
            out.append(conv_kernel(ins, operands))
        elif fused_attention(ins):
            out.append(attention_kernel(ins, operands))
        else:
            out.append(_fused_kernel(ins, [ins], by_name, {ins.name}))
    return out
