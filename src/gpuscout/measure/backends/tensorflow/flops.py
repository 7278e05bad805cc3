"""Counting the FLOPs of a model from TensorFlow's own graph of its forward pass.

Counts what the analytic formulas of the built-in workloads count, so MFU means the same for a
user's model: 2 FLOPs per multiply-add of every matrix product and convolution (MatMul,
BatchMatMul, Conv2D/3D, depthwise Conv2D, two-operand Einsum as Keras' attention and
EinsumDense layers use, and a cuDNN recurrent layer's per-step matmuls), read off the shapes
in the traced graph at batch 1. Training is 3 x forward. Element-wise work is not counted.

A graph with a loop (a recurrent layer is a ``While`` whose body is a function the graph's op
list does not show) is counted instead from XLA's HLO of the training step, each loop body
times its trip count (``predict/hlo.py``), dot and convolution only: the same count the JAX
backend and ``predict`` use. Counting such a graph's op list would miss every time step (the
BiLSTM example's MFU read 0.0 %).
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


# Matmuls per time step of a cuDNN recurrent cell: one x_t @ W and one h @ U per gate.
_GATES = {"lstm": 4, "gru": 3, "rnn_relu": 1, "rnn_tanh": 1}


def _cudnn_rnn_flops(op: Any) -> int | None:
    """A whole cuDNN recurrent layer (Keras' LSTM and GRU on a GPU run as one CudnnRNNV3 op,
    not a loop): per time step, direction and sample, 2 x gates x units x (inputs + units)."""
    x, h = op.inputs[0].shape, op.inputs[1].shape
    if x.rank != 3 or h.rank != 3 or None in (*x.as_list(), *h.as_list()):
        return None
    major = op.get_attr("time_major") if op.type == "CudnnRNNV3" else True
    seq, batch, features = (x[0], x[1], x[2]) if major else (x[1], x[0], x[2])
    dirs = 2 if op.get_attr("direction") == b"bidirectional" else 1
    layers, units = (h[0] if major else h[1]) // dirs, h[2]
    gates = _GATES.get(op.get_attr("rnn_mode").decode())
    if gates is None:
        return None
    widths = [features] + [dirs * units] * (layers - 1)  # a stacked layer reads both directions
    return int(sum(2 * gates * units * (w + units) * batch * seq * dirs for w in widths))


def _op_flops(op: Any) -> int | None:
    """FLOPs of one op, 0 if it is not a matrix product or convolution, None if unknowable."""
    kind = op.type
    if kind in ("CudnnRNN", "CudnnRNNV2", "CudnnRNNV3"):
        return _cudnn_rnn_flops(op)
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


GRAPH_METHOD = "counted from TensorFlow's graph of the model: matmul, conv and einsum only"
HLO_METHOD = (
    "counted from XLA's HLO of the training step (dot and convolution only), each loop "
    "body x its trip count"
)
_LOOPS = frozenset({"While", "StatelessWhile"})


def _forward_graph(tf: Any, model: Any) -> Any | None:
    """The graph of the forward pass at batch 1, or None for variable-length inputs."""
    specs = [tf.TensorSpec((1, *t.shape[1:]), t.dtype) for t in model.inputs]
    if any(None in spec.shape.as_list() for spec in specs):
        return None  # variable-length inputs: no fixed count

    def forward(*xs: Any) -> Any:
        return model(list(xs) if len(xs) > 1 else xs[0], training=False)

    return tf.function(forward).get_concrete_function(*specs).graph


def forward_flops_per_sample(tf: Any, model: Any) -> float | None:
    """Forward FLOPs of one sample, or None when a shape in the graph is unknown or the graph
    has a loop (whose body the op list does not show: ``training_flops_per_step``)."""
    graph = _forward_graph(tf, model)
    if graph is None or any(op.type in _LOOPS for op in graph.get_operations()):
        return None
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


def training_flops_per_step(
    tf: Any, model: Any, batch: int, precision: str
) -> tuple[float, str] | None:
    """FLOPs of one training step at ``batch`` and how they were counted, or None (MFU then
    unknown, never 0 %): 3 x the graph's forward count, or, for a model with a loop, XLA's HLO
    of the step with each loop counted per trip; where a trip count is unknown the method
    says the count is a lower bound."""
    graph = _forward_graph(tf, model)
    if graph is None:
        return None
    if not any(op.type in _LOOPS for op in graph.get_operations()):
        per_sample = training_flops_per_sample(tf, model)
        return None if per_sample is None else (per_sample * batch, GRAPH_METHOD)
    from gpuscout.measure.backends.tensorflow.hlo import live_step_hlo
    from gpuscout.predict.hlo import LOWER_BOUND, step_cost

    try:
        ir = live_step_hlo(model, batch, precision)
    except ValueError:  # a subclassed model cannot be cloned to trace: no count
        return None
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    if not cost.flops["matmul"]:
        return None
    method = HLO_METHOD + (
        f"; {LOWER_BOUND}: a loop's trip count is unknown, its body counted once"
        if cost.flops_lower_bound
        else ""
    )
    return cost.flops["matmul"], method
