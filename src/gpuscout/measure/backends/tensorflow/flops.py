"""Counting the FLOPs of a model from TensorFlow's own graph of its forward pass.

Counts what the analytic formulas of the built-in workloads count, so MFU means the same for a
user's model: 2 FLOPs per multiply-add of every matrix product and convolution (MatMul,
BatchMatMul, Conv2D/3D, depthwise Conv2D, two-operand Einsum as Keras' attention and
EinsumDense layers use), read off the shapes in the traced graph at batch 1. Training is
3 x forward. Element-wise work is not counted.
"""

from __future__ import annotations

import math
from typing import Any


def _einsum_flops(op: Any) -> int | None:
    equation = op.get_attr("equation").decode()
    inputs, _, _ = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != 2 or "." in equation:
        return None
    sizes: dict[str, int] = {}
    for term, tensor in zip(terms, op.inputs, strict=True):
        dims = tensor.shape.as_list()
        if len(dims) != len(term) or any(d is None for d in dims):
            return None
        sizes.update(zip(term, dims, strict=True))
    return 2 * math.prod(sizes.values())


def _op_flops(op: Any) -> int | None:
    """FLOPs of one op, 0 if it is not a matrix product or convolution, None if unknowable."""
    kind = op.type
    if kind not in ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D", "Conv3D",
                    "DepthwiseConv2dNative", "Einsum"):  # fmt: skip
        return 0
    if kind == "Einsum":
        return _einsum_flops(op)
    out = op.outputs[0].shape.num_elements()
    if out is None:
        return None
    if kind == "MatMul":
        k = op.inputs[0].shape[0 if op.get_attr("transpose_a") else 1]
    elif kind.startswith("BatchMatMul"):
        k = op.inputs[0].shape[-2 if op.get_attr("adj_x") else -1]
    elif kind == "DepthwiseConv2dNative":
        k = math.prod(op.inputs[1].shape[:2])
    else:  # Conv2D / Conv3D: kernel spatial dims x input channels
        k = math.prod(op.inputs[1].shape[:-1])
    return None if k is None else 2 * out * int(k)


def forward_flops_per_sample(tf: Any, model: Any) -> float | None:
    """Forward FLOPs of one sample, or None when a shape in the graph is unknown."""
    specs = [tf.TensorSpec((1, *t.shape[1:]), t.dtype) for t in model.inputs]
    if any(None in spec.shape.as_list() for spec in specs):
        return None  # variable-length inputs: no fixed count

    def forward(*xs: Any) -> Any:
        return model(list(xs) if len(xs) > 1 else xs[0], training=False)

    graph = tf.function(forward).get_concrete_function(*specs).graph
    total = 0
    for op in graph.get_operations():
        flops = _op_flops(op)
        if flops is None:
            return None
        total += flops
    return float(total) if total > 0 else None


def training_flops_per_sample(tf: Any, model: Any) -> float | None:
    """3 x the forward FLOPs (forward, backward for activations, backward for weights)."""
    forward = forward_flops_per_sample(tf, model)
    return None if forward is None else 3.0 * forward
