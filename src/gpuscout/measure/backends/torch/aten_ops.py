"""The aten operations of a captured PyTorch step as plain data, and the class of each: which
are views (free), matmuls, convolutions, fused attention, reductions, data movement, and which
write without reading (fills). No torch: ``capture.py`` records them, ``to_hlo.py`` writes them
as HLO text for predict's parser.

The classes are PyTorch's own kernels' as eager PyTorch runs them on a GPU: one kernel an op
(a layer norm, a softmax, a batch norm's statistics are library kernels that read their input
and write their outputs once), a view or a reshape no kernel at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# torch dtypes (their ``str``) as HLO names them
DTYPES = {
    "torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
    "torch.float64": "f64", "torch.int64": "s64", "torch.int32": "s32", "torch.int16": "s16",
    "torch.int8": "s8", "torch.uint8": "u8", "torch.bool": "pred", "torch.complex64": "c64",
    "torch.complex128": "c128", "torch.float8_e4m3fn": "f8e4m3fn", "torch.float8_e5m2": "f8e5m2",
}  # fmt: skip


@dataclass(frozen=True)
class TensorRef:
    """One tensor an op read or wrote: which (its identity while the step was captured), its
    HLO dtype and its shape."""

    key: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def hlo_type(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass
class AtenOp:
    """One aten operation as the dispatcher ran it: its name without namespace and overload
    (``mm``, ``convolution_backward``), its arguments by their schema's names (positional
    ones included) with every tensor a :class:`TensorRef` (a list of tensors a list of them),
    what it returned (None where the schema's output was None), and the phase of the step it
    ran in (forward, backward, optimizer)."""

    name: str
    args: dict[str, Any]
    outputs: list[TensorRef | None]
    phase: str = "forward"

    def tensors(self) -> list[TensorRef]:
        """Every tensor argument, lists flattened, in the schema's order."""
        found: list[TensorRef] = []
        for a in self.args.values():
            if isinstance(a, TensorRef):
                found.append(a)
            elif isinstance(a, list | tuple):
                found.extend(x for x in a if isinstance(x, TensorRef))
        return found

    def arg(self, position: int) -> Any:
        """The argument at ``position`` in the schema (None past the end)."""
        values = list(self.args.values())
        return values[position] if position < len(values) else None


# Metadata, bookkeeping and allocation: no kernel, no result anyone reads as data
SKIPPED = frozenset(
    ["detach", "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "empty", "empty_like",
     "empty_strided", "new_empty", "new_empty_strided", "set_", "resize_", "record_stream",
     "_record_function_enter_new", "_record_function_exit", "is_same_size", "sym_size",
     "sym_stride", "sym_numel", "_assert_async", "_assert_scalar", "_amp_update_scale_"]
)  # fmt: skip
# Views: a new shape or stride over the same memory (PyTorch launches nothing)
VIEWS = frozenset(
    ["view", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose", "permute",
     "unsqueeze", "squeeze", "slice", "select", "as_strided", "split", "split_with_sizes",
     "chunk", "unbind", "narrow", "unfold", "diagonal", "alias", "view_as_real",
     "view_as_complex", "expand", "expand_as", "_unsafe_split", "movedim", "flatten",
     "unflatten", "numpy_T", "mT", "real", "imag", "_conj", "_neg_view"]
)  # fmt: skip
MATMULS = frozenset(["mm", "addmm", "bmm", "baddbmm", "dot", "mv", "addmv", "_addmm_activation"])
CONVOLUTIONS = frozenset(["convolution", "_convolution"])
# One library kernel each that reduces (its FLOPs: the elements of its first tensor)
REDUCTIONS = frozenset(
    ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std",
     "var_mean", "std_mean", "norm", "linalg_vector_norm", "any", "all", "logsumexp",
     "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data",
     "nll_loss_forward", "nll_loss2d_forward", "native_layer_norm",
     "native_layer_norm_backward", "native_batch_norm", "_native_batch_norm_legit",
     "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
     "native_batch_norm_backward", "native_group_norm", "native_group_norm_backward",
     "_fused_rms_norm", "_fused_rms_norm_backward", "cumsum", "topk", "mse_loss",
     "mse_loss_backward", "binary_cross_entropy", "binary_cross_entropy_with_logits",
     "smooth_l1_loss", "l1_loss", "huber_loss", "cross_entropy_loss", "count_nonzero",
     "median", "mode", "kthvalue"]
)  # fmt: skip
WINDOWED = frozenset(
    ["max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d", "avg_pool3d",
     "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d", "avg_pool1d",
     "max_pool1d", "_adaptive_avg_pool2d_backward", "avg_pool2d_backward",
     "avg_pool3d_backward"]
)  # fmt: skip
SCATTERED = frozenset(
    ["max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward",
     "adaptive_max_pool2d_backward"]
)  # fmt: skip
# Data movement: a kernel that reads and writes, doing no arithmetic (HLO's opcode for it)
MOVEMENT = {
    "clone": "copy", "contiguous": "copy", "copy": "copy", "copy_": "copy", "_to_copy": "copy",
    "to": "copy", "cat": "concatenate", "stack": "concatenate", "index_select": "gather",
    "embedding": "gather", "gather": "gather", "index": "gather", "take": "gather",
    "scatter": "scatter", "scatter_": "scatter", "scatter_add": "scatter",
    "scatter_add_": "scatter", "index_put": "scatter", "index_put_": "scatter",
    "index_add": "scatter", "index_add_": "scatter", "embedding_dense_backward": "scatter",
    "index_copy": "scatter", "constant_pad_nd": "pad", "reflection_pad2d": "pad",
    "replication_pad2d": "pad", "slice_backward": "pad", "select_backward": "pad",
    "flip": "reverse", "roll": "copy", "repeat": "copy", "tril": "copy", "triu": "copy",
    "masked_select": "gather", "nonzero": "gather",
}  # fmt: skip
# Ops that write their first argument (or their result) without reading it: fills and
# random draws; what they read is the other tensors only
WRITE_ONLY = frozenset(
    ["zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "fill_", "zero_",
     "new_zeros", "new_ones", "new_full", "arange", "randn", "rand", "randint", "randn_like",
     "rand_like", "randint_like", "uniform_", "normal_", "random_", "bernoulli_", "scalar_tensor",
     "_foreach_zero_", "eye", "linspace", "randperm", "exponential_"]
)  # fmt: skip
# Elementwise aten names with an HLO opcode of their own (the fusion rules of the compiled
# view tell cheap ones from expensive ones by it); any other elementwise op keeps its name
ELEMENTWISE = {
    "add": "add", "add_": "add", "sub": "subtract", "sub_": "subtract", "rsub": "subtract",
    "mul": "multiply", "mul_": "multiply", "div": "divide", "div_": "divide", "neg": "negate",
    "exp": "exponential", "exp_": "exponential", "log": "log", "log1p": "log-plus-one",
    "expm1": "exponential-minus-one", "tanh": "tanh", "sigmoid": "logistic", "pow": "power",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs", "relu": "maximum", "relu_": "maximum",
    "maximum": "maximum", "minimum": "minimum", "clamp": "clamp", "clamp_min": "maximum",
    "clamp_max": "minimum", "where": "select", "masked_fill": "select", "masked_fill_": "select",
    "threshold_backward": "select", "erf": "erf", "sin": "sine", "cos": "cosine",
    "native_dropout": "rng", "bernoulli": "rng", "_to_copy_dtype": "convert",
    "eq": "compare", "ne": "compare", "lt": "compare", "le": "compare", "gt": "compare",
    "ge": "compare", "logical_not": "not", "bitwise_not": "not", "sign": "sign",
    "reciprocal": "divide", "square": "multiply", "lerp": "add", "lerp_": "add",
}  # fmt: skip


# In-place ops over lists that write more than their first list (the fused optimizers'
# weights and moments), by the positions of the lists they write
WRITES = {"_fused_adam_": (0, 2, 3), "_fused_adamw_": (0, 2, 3), "_fused_sgd_": (0, 2)}


def base_name(name: str) -> str:
    """The op's name as the tables above hold it: ``_foreach_add_`` is ``add_`` over lists."""
    return name.removeprefix("_foreach_") if name.startswith("_foreach_") else name


def is_attention(name: str) -> bool:
    """A fused scaled-dot-product attention kernel (flash, memory-efficient, cuDNN, or the
    CPU's flash kernel standing in for them while the step is captured)."""
    return "attention" in name and ("scaled_dot_product" in name or name.startswith("_flash")
                                    or name.startswith("_efficient"))  # fmt: skip


__all__ = ["DTYPES", "AtenOp", "TensorRef", "base_name", "is_attention"]
