"""How many times an HLO ``while`` runs, read from the loop itself.

A recurrent layer (Keras' LSTM and GRU on TensorFlow, ``lax.scan`` on JAX) compiles to a
``while`` whose body is one time step: counting the body once counts one step of a sequence of
128. The trip count is read in this order:

1. ``backend_config={"known_trip_count":{"n":"128"}}`` on the ``while``: XLA's own answer, where
   its loop analysis already ran (optimised HLO).
2. The loop's own arithmetic (what XLA's ``ComputeWhileLoopTripCount`` does on unoptimised HLO,
   which is what TensorFlow's ``stage="hlo"`` and JAX's lowering print): the condition compares
   a tuple element ``i`` of the loop state with a bound, the body adds a constant step to ``i``,
   and the ``while``'s operand starts ``i`` at a constant. The bound is a constant, or a state
   element the body passes on unchanged and that starts at a constant (TensorFlow's
   ``maximum_iterations``). A condition that is a conjunction of such compares (TensorFlow:
   ``counter < maximum_iterations and time < 128``) runs the fewest of their counts. A start
   or bound may also be an earlier loop's final counter (TensorFlow's gradient of a loop runs
   as many trips as the forward loop counted): start + step x that loop's trips.

Anything else (a data-dependent stop, a bound computed at run time) is unknown: ``None``, and
the caller counts the body once and says its count is a lower bound. No TensorFlow or JAX.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

from gpuscout.predict.hlo_text import REF, Instr, operand_text

_KNOWN = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')
_INT_SCALAR = re.compile(r"^[su](8|16|32|64)\[\]")
_SCALAR = re.compile(r"^(pred|[su](8|16|32|64))\[\]")
# Ops followed whatever their type: they carry the loop state's scalars in tuples.
_STRUCTURE = frozenset({"get-tuple-element", "tuple", "call", "while"})
# Ops that pass a scalar through unchanged for counting purposes.
_PASS = frozenset({"reshape", "bitcast", "copy", "convert"})
_FLIP = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}
_MAX_DEPTH = 64  # calls nested this deep are not followed (a loop's condition is a few ops)


@dataclass(frozen=True)
class Elem:
    """Element ``index`` of the loop state, plus ``offset``."""

    index: int
    offset: int = 0


class _State:
    """The whole loop state: the parameter of the condition and the body."""


STATE = _State()
# What a scalar evaluates to: an integer, an element of the state (plus a constant), the
# state itself, a tuple of such values, a conjunction of compares, or None (unknown).
Compare = tuple["int | Elem", str, "int | Elem"]
Value: TypeAlias = "int | Elem | _State | tuple[Value, ...] | list[Compare] | None"


def called(ins: Instr, attr: str) -> str | None:
    """The computation an instruction's ``attr=`` names (``body``, ``condition``)."""
    found = re.search(rf"\b{attr}=%?([\w.\-]+)", ins.rest)
    return found.group(1) if found else None


def trip_count(
    ins: Instr, comps: dict[str, list[Instr]], caller: list[Instr], depth: int = 0
) -> int | None:
    """How many times the ``while`` ``ins`` (in the computation ``caller``) runs its body, or
    None where that cannot be read from the HLO."""
    known = _KNOWN.search(ins.rest)
    if known:
        return int(known.group(1))
    try:
        return _read_trip_count(ins, comps, caller, depth)
    except RecursionError:  # a chain of scalar arithmetic too deep to follow: unknown
        return None


def _read_trip_count(
    ins: Instr, comps: dict[str, list[Instr]], caller: list[Instr], depth: int
) -> int | None:
    """``trip_count`` from the loop's own arithmetic (2. in the module docstring)."""
    cond, body = called(ins, "condition"), called(ins, "body")
    if cond not in comps or body not in comps:
        return None
    if depth > _MAX_DEPTH:
        return None
    tests = _root_value(comps, cond, {0: STATE}, depth)
    nxt = _root_value(comps, body, {0: STATE}, depth)
    refs = REF.findall(operand_text(ins.rest))
    init = _Eval(comps, caller, {}, depth).value(refs[0]) if refs else None
    if not isinstance(tests, list) or not tests or not isinstance(nxt, tuple):
        return None
    if not isinstance(init, tuple):
        return None
    counts = [_count(test, init, nxt) for test in tests]
    return None if any(c is None for c in counts) else min(c for c in counts if c is not None)


def _root_value(
    comps: dict[str, list[Instr]], name: str, env: dict[int, Value], depth: int = 0
) -> Value:
    """What computation ``name`` returns, its parameters bound to ``env``."""
    instrs = comps.get(name, [])
    root = next((i for i in instrs if i.root), None)
    return _Eval(comps, instrs, env, depth).value(root.name) if root else None


def _count(
    test: tuple[object, str, object], init: tuple[object, ...], nxt: tuple[object, ...]
) -> int | None:
    """Iterations while ``lhs direction rhs`` holds, one side the induction variable."""
    lhs, direction, rhs = test

    def step(side: object) -> int | None:
        """The body's increment of an element, None if it is not ``element + constant``."""
        if not isinstance(side, Elem) or side.index >= len(nxt):
            return None
        after = nxt[side.index]
        return after.offset if isinstance(after, Elem) and after.index == side.index else None

    def start(side: object) -> int | None:
        """A side's value on the first test: a constant, or a state element's initial value."""
        if isinstance(side, int):
            return side
        if isinstance(side, Elem) and side.index < len(init):
            first = init[side.index]
            return first + side.offset if isinstance(first, int) else None
        return None

    if step(lhs):  # the induction variable on the left, the bound on the right
        var, bound = lhs, rhs
    elif step(rhs):
        var, bound, direction = rhs, lhs, _FLIP[direction]
    else:
        return None
    by, v0, limit = step(var), start(var), start(bound)
    if isinstance(bound, Elem) and step(bound) != 0:
        return None  # the bound moves too
    if not by or v0 is None or limit is None:
        return None
    return _iterations(v0, by, direction, limit)


def _iterations(v0: int, by: int, direction: str, limit: int) -> int | None:
    """How many of ``v0, v0 + by, v0 + 2 by, ...`` pass ``v direction limit`` before the first
    that fails; None for a loop that never ends."""
    if by > 0 and direction in ("LT", "LE"):
        gap = limit - v0 + (direction == "LE")  # iterate while v < gap + v0
        return max(0, -(-gap // by))
    if by < 0 and direction in ("GT", "GE"):
        gap = v0 - limit + (direction == "GE")
        return max(0, -(-gap // -by))
    if direction == "NE" and (limit - v0) % by == 0 and (limit - v0) // by >= 0:
        return (limit - v0) // by
    return None


class _Eval:
    """Scalar integer arithmetic of one computation, as far as counting a loop needs it."""

    def __init__(
        self, comps: dict[str, list[Instr]], instrs: list[Instr], env: dict[int, Value],
        depth: int = 0,
    ) -> None:  # fmt: skip
        self.comps, self.instrs, self.env, self.depth = comps, instrs, env, depth
        self.by_name = {i.name: i for i in instrs}
        self.memo: dict[str, Value] = {}

    def value(self, name: str) -> Value:
        if name not in self.memo:
            self.memo[name] = None  # a cycle (not valid HLO) stays unknown
            ins = self.by_name.get(name)
            self.memo[name] = self._value(ins) if ins is not None else None
        return self.memo[name]

    def _value(self, ins: Instr) -> Value:
        operands = operand_text(ins.rest)
        op = ins.opcode
        if op == "parameter":
            return self.env.get(int(operands)) if operands.strip().isdigit() else None
        if op == "constant":
            text = operands.strip()
            scalar = _INT_SCALAR.match(ins.shape)
            return int(text) if scalar and re.fullmatch(r"-?\d+", text) else None
        if op not in _STRUCTURE and not _SCALAR.match(ins.shape):
            return None  # only scalar integer and predicate arithmetic counts a loop
        args = [self.value(r) for r in REF.findall(operands)]
        if op == "get-tuple-element":
            index = re.search(r"\bindex=(\d+)", ins.rest[len(operands) :])
            src = args[0] if args else None
            if index is None:
                return None
            i = int(index.group(1))
            if src is STATE:
                return Elem(i)
            return src[i] if isinstance(src, tuple) and i < len(src) else None
        if op == "tuple":
            return tuple(args)
        if op in _PASS and len(args) == 1 and isinstance(args[0], int | Elem | list):
            return args[0]
        if op in ("add", "subtract") and len(args) == 2:
            return _affine(args[0], args[1], 1 if op == "add" else -1)
        if op == "compare" and len(args) == 2:
            found = re.search(r"direction=([A-Z]+)", ins.rest)
            a, b = args
            if (
                found
                and found.group(1) in _FLIP
                and isinstance(a, int | Elem)
                and isinstance(b, int | Elem)
            ):
                return [(a, found.group(1), b)]
            return None
        if op == "and" and len(args) == 2 and all(isinstance(a, list) for a in args):
            return [t for a in args if isinstance(a, list) for t in a]
        if op == "while" and self.depth < _MAX_DEPTH:
            return self._after_loop(ins)
        if op == "call" and self.depth < _MAX_DEPTH:
            target = called(ins, "to_apply")
            if target not in self.comps:
                return None
            inner = self.comps[target]
            root = next((i for i in inner if i.root), None)
            sub = _Eval(self.comps, inner, dict(enumerate(args)), self.depth + 1)
            return sub.value(root.name) if root else None
        return None

    def _after_loop(self, ins: Instr) -> Value:
        """A loop's final state, where it is known: each counter that starts at a constant
        and steps by a constant ends at start + step x trips (TensorFlow's gradient of a loop
        runs as many times as the loop's final counter says)."""
        trips = trip_count(ins, self.comps, self.instrs, self.depth + 1)
        body = called(ins, "body")
        refs = REF.findall(operand_text(ins.rest))
        if trips is None or body is None or not refs:
            return None
        nxt = _root_value(self.comps, body, {0: STATE}, self.depth + 1)
        init = self.value(refs[0])
        if not isinstance(nxt, tuple) or not isinstance(init, tuple):
            return None
        return tuple(
            first + after.offset * trips
            if isinstance(first, int) and isinstance(after, Elem) and after.index == j
            else None
            for j, (first, after) in enumerate(zip(init, nxt, strict=False))
        )


def _affine(a: Value, b: Value, sign: int) -> Value:
    """``a + sign * b`` where the result is still a constant or a state element + constant."""
    if isinstance(a, int) and isinstance(b, int):
        return a + sign * b
    if isinstance(a, Elem) and isinstance(b, int):
        return Elem(a.index, a.offset + sign * b)
    if sign == 1 and isinstance(a, int) and isinstance(b, Elem):
        return Elem(b.index, b.offset + a)
    return None
