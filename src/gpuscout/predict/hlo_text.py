"""HLO text as data: its instructions, array shapes and bytes, and the XLA facts about them
the step cost reads (which ops are free, which fuse into their consumer, which are dead).

No TensorFlow or JAX: the text comes from either backend's ``hlo.py``. What a step costs is
``predict/hlo.py``, built on this.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpuscout.core.step_ir import CAUSAL, FUSED_ATTENTION_BACKWARD, FUSED_ATTENTION_FORWARD

BYTES = {
    "pred": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1,
    "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4,
    "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
}  # fmt: skip


FREE = frozenset(
    [
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "reshape",
        "bitcast",
        "broadcast",
        "iota",
        "after-all",
        "partition-id",
        "replica-id",
        "opt-barrier",
        "rng-get-and-update-state",
    ]
)


REDUCTION = frozenset({"reduce", "reduce-window", "select-and-scatter"})


MOVEMENT = frozenset(
    [
        "copy",
        "transpose",
        "concatenate",
        "pad",
        "slice",
        "dynamic-slice",
        "dynamic-update-slice",
        "reverse",
        "gather",
        "scatter",
        "convert",
        "bitcast-convert",
    ]
)


DESCEND = frozenset({"call", "while", "conditional"})


_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\]")


_INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([a-z][a-z0-9\-]*)\((.*)$")


REF = re.compile(r"%([\w.\-]+)")


_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")


@dataclass(frozen=True)
class Instr:
    """One HLO instruction: ``name = shape opcode(rest``."""

    name: str
    shape: str  # the result type text
    opcode: str
    rest: str  # operands and attributes
    root: bool


def array_shapes(text: str) -> list[tuple[str, list[int]]]:
    """Each array type in ``text`` (``f32[8,128]``) as (dtype, dims); tokens are skipped."""
    return [
        (dtype, [int(d) for d in dims.split(",") if d])
        for dtype, dims in _ARRAY.findall(text)
        if dtype in BYTES
    ]


def nbytes(text: str) -> int:
    """Bytes of the arrays ``text`` names (a result type or an operand list)."""
    return sum(BYTES[t] * math.prod(dims) for t, dims in array_shapes(text))


def element_count(text: str) -> int:
    """Elements of the arrays ``text`` names."""
    return sum(math.prod(dims) for _, dims in array_shapes(text))


def operand_text(rest: str) -> str:
    """The operand list: the text up to the parenthesis that closes the op's call."""
    depth = 1
    for i, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return rest[:i]
    return rest


def parse_module(text: str) -> tuple[str, dict[str, list[Instr]]]:
    """The entry computation's name and every computation's instructions."""
    comps: dict[str, list[Instr]] = {}
    entry, current = "", None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header and not line.startswith(" "):
            current = header.group(2)
            comps[current] = []
            if header.group(1):
                entry = current
            continue
        if line.strip() == "}":
            current = None
            continue
        m = _INSTR.match(line)
        if m and current is not None:
            root = bool(m.group(1))
            comps[current].append(Instr(m.group(2), m.group(3), m.group(4), m.group(5), root))
    if not entry:
        raise ValueError("no ENTRY computation in the HLO text")
    return entry, comps


def dot_flops(ins: Instr, operands: str) -> float:
    """2 x output elements x the contracted size."""
    lhs = array_shapes(operands)[0][1]
    dims = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", ins.rest)
    contracted = math.prod(lhs[int(d)] for d in dims.group(1).split(",") if d) if dims else 1
    return 2.0 * element_count(ins.shape) * contracted


# FlashAttention-2's tile of keys (Dao 2023, arXiv:2307.08691): a causal kernel computes the
# tiles on and below the diagonal, (n + 1) / 2n of them for n tiles a row.
ATTENTION_TILE = 128


def _call_target(ins: Instr) -> str:
    """A custom call's target name ("" for any other instruction)."""
    target = re.search(r'custom_call_target="([^"]+)"', ins.rest)
    return target.group(1) if target and ins.opcode == "custom-call" else ""


def fused_attention(ins: Instr) -> str | None:
    """'forward' or 'backward' for a fused attention kernel's custom call (see ``step_ir``)."""
    name = _call_target(ins)
    if name.startswith(FUSED_ATTENTION_FORWARD):
        return "forward"
    return "backward" if name.startswith(FUSED_ATTENTION_BACKWARD) else None


def attention_gemm(ins: Instr, operands: str) -> tuple[float, int, int, int, int]:
    """A fused attention kernel's FLOPs and GEMM view (batch x heads, q length, k length,
    head size), by FlashAttention-2's count: forward 4 x batch x heads x Lq x Lk x d (the
    scores and the weighted sum), backward 2.5 x that (the scores recomputed, and the
    gradients of the weights, values, queries and keys); under a causal mask only the tiles
    on and below the diagonal."""
    (_, q), (_, k) = array_shapes(operands)[:2]
    batch, length, heads, size = q
    keys = k[1]
    flops = 4.0 * batch * heads * length * keys * size
    if fused_attention(ins) == "backward":
        flops *= 2.5
    if _call_target(ins).endswith(CAUSAL):
        tiles = max(1, math.ceil(keys / ATTENTION_TILE))
        flops *= (tiles + 1) / (2 * tiles)
    return flops, batch * heads, length, keys, size


def conv_flops(ins: Instr, operands: str) -> float:
    """2 x output elements x window taps x input features per group."""
    lhs = array_shapes(operands)[0][1]
    window = re.search(r"window=\{size=([0-9x]+)", ins.rest)
    taps = float(math.prod(int(s) for s in window.group(1).split("x"))) if window else 1.0
    dilated = re.search(r"lhs_dilate=([0-9x]+)", ins.rest)
    if dilated:  # a gradient of a strided conv: taps that land on inserted zeros do no work
        taps /= math.prod(int(s) for s in dilated.group(1).split("x"))
    labels = re.search(r"dim_labels=([0-9a-z]+)_", ins.rest)
    feature_dim = labels.group(1).index("f") if labels else len(lhs) - 1
    groups = re.search(r"feature_group_count=(\d+)", ins.rest)
    per_group = lhs[feature_dim] // (int(groups.group(1)) if groups else 1)
    return 2.0 * element_count(ins.shape) * taps * per_group


def is_elementwise(ins: Instr) -> bool:
    """Work of its own that is neither a matmul, a reduction nor a call."""
    return (
        ins.opcode not in FREE
        and ins.opcode not in REDUCTION
        and ins.opcode not in ("dot", "convolution", *DESCEND)
        and fused_attention(ins) is None
    )


# Elementwise ops XLA's GPU fusion does not duplicate into several consumers (it recomputes
# cheap ones in each instead of writing them out): transcendental and power functions
# (``InstructionFusion::IsExpensive``; f32 divide and square roots are cheap on a GPU), and data
# movement that changes layout, which XLA does not recompute either.
EXPENSIVE = frozenset(
    ["exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
     "power", "atan2", "cosine", "sine", "tan", "erf", "cbrt", "remainder",
     "transpose", "concatenate", "pad", "gather", "scatter", "dynamic-update-slice", "copy",
     "rng", "rng-bit-generator", "sort"]
)  # fmt: skip
# At most this many consumers recompute a cheap producer (XLA's GPU fusion duplicates a producer
# into its consumers, guarding against blow-ups; a batch norm's input has 5 in training).
MAX_DUPLICATES = 8


def fusion_targets(instrs: list[Instr]) -> dict[str, list[str]]:
    """For each elementwise result XLA's GPU fusion keeps out of memory, the consumers it is
    fused into: its single elementwise (or reduce) consumer (loop and input fusion), or, for a
    cheap op (a convert, an add, a multiply, ...), each of its up to ``MAX_DUPLICATES``
    consumers when all of them are elementwise or reduces and recomputing it reads less than
    writing it once and reading it in each (XLA's GPU fusion weighs the same): XLA recomputes it
    in each rather than writing it out (mixed precision's f16 -> f32 convert before a norm's
    statistics and its normalisation is read as f16 by each, not written and re-read as f32)."""
    consumers: dict[str, list[Instr]] = {}
    for ins in instrs:
        for ref in set(REF.findall(operand_text(ins.rest))):
            consumers.setdefault(ref, []).append(ins)

    def effective(name: str, depth: int = 0) -> list[Instr]:
        out: list[Instr] = []
        for user in consumers.get(name, []):
            if user.opcode in ("reshape", "bitcast") and not user.root and depth < 8:
                out.extend(effective(user.name, depth + 1))
            else:
                out.append(user)
        return out

    by_name = {i.name: i for i in instrs}
    targets: dict[str, list[str]] = {}
    for ins in instrs:
        if not is_elementwise(ins) or ins.root:
            continue
        users = list({u.name: u for u in effective(ins.name)}.values())
        fusible = all((is_elementwise(u) or u.opcode in REDUCTION) and not u.root for u in users)
        if not users or not fusible:
            continue
        if len(users) == 1 or (
            len(users) <= MAX_DUPLICATES
            and ins.opcode not in EXPENSIVE
            and len(users) * _input_bytes(ins, by_name) < (1 + len(users)) * nbytes(ins.shape)
        ):
            targets[ins.name] = [u.name for u in users]
    return targets


def _input_bytes(ins: Instr, by_name: dict[str, Instr]) -> int:
    """Bytes an instruction reads, looking through reshapes and broadcasts to the tensors
    actually in memory (a broadcast bias is its vector)."""
    total = 0
    for ref in set(REF.findall(operand_text(ins.rest))):
        src = by_name.get(ref)
        while src is not None and src.opcode in ("reshape", "bitcast", "broadcast"):
            refs = REF.findall(operand_text(src.rest))
            src = by_name.get(refs[0]) if refs else None
        total += nbytes(src.shape) if src is not None and src.opcode != "iota" else 0
    return total


def written(ins: Instr) -> str:
    """The type of what an instruction writes to memory: its result, but for a
    dynamic-update-slice only its update. XLA updates that buffer in place (a loop's carried
    buffer, the stacked outputs of a recurrent layer, one time step a trip), so counting the
    whole buffer would charge a loop of 128 trips 128 buffers."""
    if ins.opcode == "dynamic-update-slice":
        arrays = array_shapes(operand_text(ins.rest))
        if len(arrays) >= 2:
            dtype, dims = arrays[1]
            return f"{dtype}[{','.join(map(str, dims))}]"
    return ins.shape


def read_of(ins: Instr, position: int, source: Instr) -> int:
    """Bytes ``ins`` reads of its operand ``position`` (``source``, the tensor in memory): all
    of it, but a dynamic-slice reads only its slice and a dynamic-update-slice does not read
    the buffer it updates in place (``written``)."""
    if position == 0 and ins.opcode == "dynamic-slice":
        return nbytes(ins.shape)
    if position == 0 and ins.opcode == "dynamic-update-slice":
        return 0
    return 0 if source.opcode == "iota" else nbytes(source.shape)


def dtype_of(text: str) -> str:
    """The first array's dtype (f32 where none is named)."""
    arrays = array_shapes(text)
    return arrays[0][0] if arrays else "f32"


def int_attr(rest: str, attr: str) -> list[int]:
    """An ``attr={1,2}`` list of an instruction (empty where it is absent)."""
    found = re.search(rf"\b{attr}=\{{([0-9,]*)\}}", rest)
    return [int(d) for d in found.group(1).split(",") if d] if found else []


def live_instrs(instrs: list[Instr]) -> list[Instr]:
    """The instructions the result depends on: XLA drops the rest (dead code) before running."""
    by_name = {i.name: i for i in instrs}
    todo = [i.name for i in instrs if i.root]
    live: set[str] = set()
    while todo:
        name = todo.pop()
        if name in live or name not in by_name:
            continue
        live.add(name)
        todo.extend(REF.findall(operand_text(by_name[name].rest)))
    return [i for i in instrs if i.name in live]
