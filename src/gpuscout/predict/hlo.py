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
  (The kernels are built in ``hlo_kernels.py``.)

The same computation is also cut op by op (``StepCost.op_by_op``): every elementwise and
reduction op its own kernel, reading its operands and writing its result, the GEMMs as above.
That is how eager PyTorch runs a model written as tensor ops (Hugging Face's Llama and PEFT's
LoRA without ``torch.compile``), where XLA's fusion is not what the GPU runs; a stack that calls
library-fused ops instead (cuDNN's batch norm, APEX's layer norm) is nearer the fused count.

A fused kernel's bytes are what enters it from outside (looking through reshapes and
broadcasts to the tensor actually read) plus what it writes. The class totals count writes
only, so an elementwise kernel's bytes exceed its class share by its reads. FLOPs add up
exactly: the sum over all kernels equals the sum over the classes.

Loops: a ``while`` (a recurrent layer's time steps, a ``lax.scan``) runs its body once per trip,
so the body's FLOPs, bytes and kernels count x its trip count, and its condition's once more;
nested loops multiply (``hlo_loops.py`` reads the trip count). Where the trip count cannot be
read the body counts once and the step's count is a lower bound (``StepCost.flops_lower_bound``,
said in the profile's method and wherever its FLOPs or an MFU are shown). Inside a loop a
``dynamic-update-slice`` writes one step into its stacked buffer in place and a
``dynamic-slice`` reads one step (``hlo_text.written``, ``read_of``), as XLA runs them: counting
whole buffers would charge every trip the whole sequence.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gpuscout.core.step_ir import TORCH_BACKWARD
from gpuscout.predict.hlo_kernels import kernels, op_by_op_kernels
from gpuscout.predict.hlo_loops import called as called_by
from gpuscout.predict.hlo_loops import trip_count
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
    element_count,
    fused_attention,
    fusion_targets,
    live_instrs,
    nbytes,
    operand_text,
    parse_module,
    written,
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
    # Gradient checkpointing: the recomputed forward results the backward pass reads
    recomputed_activation_bytes: float = 0.0
    # Every kernel in step order, unmerged: two traces of one model at two batch sizes give
    # lists that align one to one, which is how a profile learns how each kernel scales.
    raw_kernels: list[Kernel] = field(default_factory=list)
    # The same step run op by op (``hlo_kernels.op_by_op_kernels``: nothing fused, as eager
    # PyTorch runs a model written as tensor ops), in step order, unmerged
    raw_op_by_op: list[Kernel] = field(default_factory=list)
    # Each ``while`` loop's trip count, in program order (None: unknown, its body counted once).
    loop_trips: list[int | None] = field(default_factory=list)

    @property
    def flops_lower_bound(self) -> bool:
        """A loop of unknown trip count was counted once: the step does at least this much."""
        return None in self.loop_trips

    @property
    def kernels(self) -> list[Kernel]:
        """The step's kernels, identical ones kept once with a count."""
        return merge(self.raw_kernels)

    @property
    def op_by_op(self) -> list[Kernel]:
        """The step's kernels run op by op, identical ones kept once with a count."""
        return merge(self.raw_op_by_op)


# Said with every count that a loop of unknown trip count leaves short; ``is_lower_bound``
# finds it again in a stored run's ``flops_method``.
LOWER_BOUND = "a lower bound"
# How a profile's method names its loops; ``predict.caveats`` finds them by it.
LOOPS = "(recurrent layers, scans)"


def loops_note(cost: StepCost) -> str:
    """What the loops of a step did to its count, for the profile's method ('' if none)."""
    trips = cost.loop_trips
    if not trips:
        return ""
    known = [t for t in trips if t is not None]
    note = f"{len(trips)} while loop{'s' * (len(trips) > 1)} {LOOPS}"
    if known:
        note += f", bodies counted x their trip counts ({', '.join(map(str, known))})"
    unknown = len(trips) - len(known)
    if unknown:
        note += (
            f"; {unknown} of unknown trip count counted once: FLOPs, bytes and launches are "
            f"{LOWER_BOUND}, speeds an upper bound"
        )
    # said because it can be the largest error of the prediction (a GPU time-step loop is
    # launch-bound), and no published row validates it
    note += (
        "; each trip's kernels launched one by one, as XLA runs a loop: without XLA, "
        "TensorFlow runs a Keras LSTM or GRU as one cuDNN kernel a layer, which can be "
        "several times faster (measure yours with gpuscout bench --model)"
    )
    return note


def is_lower_bound(flops_method: str | None) -> bool:
    """Whether FLOPs counted with this method (a stored run's) are a lower bound."""
    return LOWER_BOUND in (flops_method or "")


def step_cost(text: str, forward_scope: str | None = None) -> StepCost:
    """FLOPs and estimated bytes of the step an HLO module describes.

    ``forward_scope``: the model's name, which prefixes the op names of its forward pass.
    """
    entry, comps = parse_module(text)
    cost = StepCost()
    scope = f'op_name="{forward_scope}' if forward_scope else None
    _add(cost, comps, entry, set(), scope, 1)
    return cost


def _add(
    cost: StepCost,
    comps: dict[str, list[Instr]],
    name: str,
    seen: set[str],
    scope: str | None,
    times: int,
) -> None:
    """Count computation ``name``, which runs ``times`` per step (a loop body: the product of
    the trip counts of the loops around it)."""
    if name in seen:  # a computation is counted once even if called from several places
        return
    seen.add(name)
    live = live_instrs(comps.get(name, []))
    fusable = _fused_into_consumer(live)
    cost.raw_kernels.extend(
        k if times == 1 else k.model_copy(update={"count": k.count * times}) for k in kernels(live)
    )
    cost.raw_op_by_op.extend(
        k if times == 1 else k.model_copy(update={"count": k.count * times})
        for k in op_by_op_kernels(live)
    )
    reduced: set[str] = set()
    for ins in live:
        if ins.opcode == "while":
            # The body runs once per trip, the condition once more (the test that ends it).
            trips = trip_count(ins, comps, comps.get(name, []))
            cost.loop_trips.append(trips)
            runs = times * (1 if trips is None else trips)
            for called, extra in ((called_by(ins, "body"), 0), (called_by(ins, "condition"), 1)):
                if called is not None and runs + extra * times > 0:
                    _add(cost, comps, called, seen, scope, runs + extra * times)
            continue
        if ins.opcode in DESCEND:
            for called in re.findall(r"(?:to_apply|body|condition|branch_computations=\{?|"
                                     r"true_computation|false_computation)=?%?([\w.\-]+)",
                                     ins.rest):  # fmt: skip
                _add(cost, comps, called, seen, scope, times)
            continue
        if ins.opcode in FREE:
            continue
        operands = operand_text(ins.rest)
        out_bytes = nbytes(ins.shape)
        if ins.opcode == "dot":
            cls, flops, moved = "matmul", dot_flops(ins, operands), nbytes(operands) + out_bytes
        elif ins.opcode == "convolution":
            cls, flops, moved = "matmul", conv_flops(ins, operands), nbytes(operands) + out_bytes
        elif fused_attention(ins):
            cls, moved = "matmul", nbytes(operands) + out_bytes
            flops = attention_gemm(ins, operands)[0]
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
            cls, moved = "elementwise", 0 if fused else nbytes(written(ins))
        cost.flops[cls] += flops * times
        cost.bytes[cls] += moved * times
        cost.ops[cls] += times
    if scope:
        cost.saved_activation_bytes += _saved_bytes(live, scope)
        cost.recomputed_activation_bytes += _saved_bytes(live, REMATTED, backward_only=True)


def _fused_into_consumer(instrs: list[Instr]) -> dict[str, bool]:
    """Elementwise results XLA keeps in registers: a single consumer that is itself
    elementwise (loop fusion) or reduce (input fusion), looking through reshapes, or several
    such consumers that each recompute a cheap one (``fusion_targets``). Results that leave
    the step (the tuple of outputs: updated weights, the loss) are written to memory."""
    targets = fusion_targets(instrs)
    return {ins.name: ins.name in targets for ins in instrs}


# How a gradient op is named: TensorFlow's GradientTape, JAX's transpose of the forward's jvp,
# a captured PyTorch step's autograd (``measure/backends/torch/to_hlo.py``)
_GRADIENT_MARKS = ('op_name="gradient_tape', "/transpose(jvp(", f'op_name="{TORCH_BACKWARD}/')
# How JAX names the forward ops a checkpointed (``jax.checkpoint``) step recomputes in its
# backward pass
REMATTED = "/rematted_computation/"


def _saved_bytes(instrs: list[Instr], scope: str, backward_only: bool = False) -> float:
    """Bytes of forward results (ops named with ``scope``) that gradient ops read, through
    reshapes and the like; ``backward_only``: read by gradient ops that are not themselves
    recomputed forward ops (what a checkpointed step's recomputation hands the backward)."""
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
        if backward_only and REMATTED in ins.rest:
            continue
        for ref in REF.findall(operand_text(ins.rest)):
            src = source(ref)
            if src is not None and scope in src.rest and src.opcode not in FREE:
                saved[src.name] = nbytes(src.shape)
    return float(sum(saved.values()))
