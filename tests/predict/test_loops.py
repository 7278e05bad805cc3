"""HLO ``while`` loops counted with their trip count (issue 30): recurrent layers and scans.

Hand-written modules pin each way a trip count is read (XLA's ``known_trip_count``, the loop's
own compare, a bound carried in the state, nesting) and what an unknown one does (counted once,
marked a lower bound). Real recurrent training steps (TensorFlow in this process, JAX in its
own) are checked against the analytic count, as a user's LSTM would be counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscout.predict.hlo import LOWER_BOUND, step_cost
from gpuscout.predict.hlo_text import parse_module
from tests.data import recurrent_models as rec

MODELS = Path(__file__).parents[1] / "data" / "recurrent_models.py"
EXAMPLE = Path(__file__).parents[2] / "examples" / "models" / "lstm.py"
S = "(s32[], f32[4,8]{1,0}, f32[8,8]{1,0}, s32[])"  # counter, h, weights, a bound
S_HEAD = "(s32[], f32[4,8], f32[8,8], s32[])"
DOT = 2 * 4 * 8 * 8  # the body's h @ w


def _loop(lhs: str, rhs: str, direction: str, start: int = 0, by: int = 1,
          bound: str = "constant(16)", config: str = "") -> str:  # fmt: skip
    """``h = tanh(h @ w)`` in a while loop: the counter starts at ``start`` and steps ``by``;
    the condition is ``lhs direction rhs`` over %i (the counter), %n (the bound carried in the
    state, set by ``bound`` in the entry), %c (16) and %z (0)."""
    return f"""HloModule loop

%body (p: {S_HEAD}) -> {S_HEAD} {{
  %p = {S} parameter(0)
  %i = s32[] get-tuple-element({S} %p), index=0
  %by = s32[] constant({by})
  %next = s32[] add(s32[] %i, s32[] %by)
  %h = f32[4,8]{{1,0}} get-tuple-element({S} %p), index=1
  %w = f32[8,8]{{1,0}} get-tuple-element({S} %p), index=2
  %n = s32[] get-tuple-element({S} %p), index=3
  %dot = f32[4,8]{{1,0}} dot(f32[4,8]{{1,0}} %h, f32[8,8]{{1,0}} %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %act = f32[4,8]{{1,0}} tanh(f32[4,8]{{1,0}} %dot)
  ROOT %out = {S} tuple(s32[] %next, f32[4,8]{{1,0}} %act, f32[8,8]{{1,0}} %w, s32[] %n)
}}

%cond (p: {S_HEAD}) -> pred[] {{
  %p = {S} parameter(0)
  %i = s32[] get-tuple-element({S} %p), index=0
  %n = s32[] get-tuple-element({S} %p), index=3
  %c = s32[] constant(16)
  %z = s32[] constant(0)
  ROOT %test = pred[] compare(s32[] {lhs}, s32[] {rhs}), direction={direction}
}}

ENTRY %main (h0: f32[4,8], w: f32[8,8], runtime: s32[]) -> f32[4,8] {{
  %h0 = f32[4,8]{{1,0}} parameter(0)
  %w = f32[8,8]{{1,0}} parameter(1)
  %runtime = s32[] parameter(2)
  %start = s32[] constant({start})
  %bound = s32[] {bound}
  %init = {S} tuple(s32[] %start, f32[4,8]{{1,0}} %h0, f32[8,8]{{1,0}} %w, s32[] %bound)
  %loop = {S} while({S} %init), condition=%cond, body=%body{config}
  ROOT %h = f32[4,8]{{1,0}} get-tuple-element({S} %loop), index=1
}}
"""  # noqa: E501


RUNTIME = "copy(s32[] %runtime)"  # a bound known only when the step runs
# as XLA's optimised HLO prints it (jax.jit(...).compile().as_text() of a lax.scan, JAX 0.10.2)
KNOWN_12 = (
    ', backend_config={"dynamic_variables":[],"known_induction_variable":{"tuple_index":"0"},'
    '"known_init_step":{"init":"0","step":"1"},"known_trip_count":{"n":"12"}}'
)


@pytest.mark.parametrize(
    ("module", "trips"),
    [
        (_loop("%i", "%c", "LT"), 16),  # lax.scan, Keras' RNN: for i in range(16)
        (_loop("%i", "%c", "LE"), 17),
        (_loop("%c", "%i", "GT"), 16),  # the counter on the right
        (_loop("%i", "%c", "LT", by=3), 6),  # 0, 3, ..., 15
        (_loop("%i", "%z", "GT", start=16, by=-1), 16),  # counting down
        (_loop("%i", "%z", "GE", start=16, by=-1), 17),
        (_loop("%i", "%c", "NE", by=2), 8),
        (_loop("%i", "%n", "LT"), 16),  # TensorFlow: the bound is a loop variable
        (_loop("%i", "%n", "LT", bound=RUNTIME, config=KNOWN_12), 12),  # XLA says
        (_loop("%i", "%c", "LT", start=20), 0),  # never entered
    ],
)
def test_a_loop_body_counts_once_per_trip(module: str, trips: int) -> None:
    cost = step_cost(module)
    assert cost.loop_trips == [trips] and not cost.flops_lower_bound
    assert cost.flops["matmul"] == DOT * trips
    assert sum(k.count for k in cost.kernels if k.op == "matmul") == trips
    # tanh and the counter's add run once a trip, the condition's compare once more
    assert cost.flops["elementwise"] == (4 * 8 + 1) * trips + trips + 1


@pytest.mark.parametrize(
    "module",
    [
        _loop("%i", "%n", "LT", bound=RUNTIME),  # a bound the HLO does not know
        _loop("%i", "%c", "NE", by=3),  # 16 is never reached: no count to give
        _loop("%i", "%c", "LT", by=-1),  # runs away
    ],
)
def test_an_unknown_trip_count_is_counted_once_and_marked(module: str) -> None:
    from gpuscout.core.step_ir import StepIR
    from gpuscout.predict.hlo import loops_note
    from gpuscout.predict.profile_trace import profile_from_ir
    from gpuscout.report.predict_table import breakdown_table

    cost = step_cost(module)
    assert cost.loop_trips == [None] and cost.flops_lower_bound
    assert cost.flops["matmul"] == DOT
    ir = StepIR(hlo=module, params=64, param_bytes=256, optimizer_state_bytes=0,
                tf_version="2.21.0", model_name="net")  # fmt: skip
    profile = profile_from_ir("model:net.py:build:abc", {}, 4, "fp32", ir, cost)
    assert profile.flops_lower_bound and LOWER_BOUND in profile.method
    assert loops_note(cost) in profile.method  # printed as predict's "profile:" assumption
    assert "at least" in str(breakdown_table([], profile).title)


T = "(s32[], f32[4,8]{1,0}, f32[8,8]{1,0})"  # the outer loop's state: counter, h, weights
NESTED = f"""HloModule nested

%inner_body (p: {S_HEAD}) -> {S_HEAD} {{
  %p = {S} parameter(0)
  %i = s32[] get-tuple-element({S} %p), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one)
  %h = f32[4,8]{{1,0}} get-tuple-element({S} %p), index=1
  %w = f32[8,8]{{1,0}} get-tuple-element({S} %p), index=2
  %n = s32[] get-tuple-element({S} %p), index=3
  %dot = f32[4,8]{{1,0}} dot(f32[4,8]{{1,0}} %h, f32[8,8]{{1,0}} %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT %out = {S} tuple(s32[] %next, f32[4,8]{{1,0}} %dot, f32[8,8]{{1,0}} %w, s32[] %n)
}}

%inner_cond (p: {S_HEAD}) -> pred[] {{
  %p = {S} parameter(0)
  %i = s32[] get-tuple-element({S} %p), index=0
  %c = s32[] constant(16)
  ROOT %test = pred[] compare(s32[] %i, s32[] %c), direction=LT
}}

%outer_body (q: (s32[], f32[4,8], f32[8,8])) -> (s32[], f32[4,8], f32[8,8]) {{
  %q = {T} parameter(0)
  %j = s32[] get-tuple-element({T} %q), index=0
  %one = s32[] constant(1)
  %j1 = s32[] add(s32[] %j, s32[] %one)
  %h0 = f32[4,8]{{1,0}} get-tuple-element({T} %q), index=1
  %w = f32[8,8]{{1,0}} get-tuple-element({T} %q), index=2
  %zero = s32[] constant(0)
  %init = {S} tuple(s32[] %zero, f32[4,8]{{1,0}} %h0, f32[8,8]{{1,0}} %w, s32[] %zero)
  %inner = {S} while({S} %init), condition=%inner_cond, body=%inner_body
  %h = f32[4,8]{{1,0}} get-tuple-element({S} %inner), index=1
  ROOT %o = {T} tuple(s32[] %j1, f32[4,8]{{1,0}} %h, f32[8,8]{{1,0}} %w)
}}

%outer_cond (q: (s32[], f32[4,8], f32[8,8])) -> pred[] {{
  %q = {T} parameter(0)
  %j = s32[] get-tuple-element({T} %q), index=0
  %four = s32[] constant(4)
  ROOT %t = pred[] compare(s32[] %j, s32[] %four), direction=LT
}}

ENTRY %main (h0: f32[4,8], w: f32[8,8]) -> f32[4,8] {{
  %h0 = f32[4,8]{{1,0}} parameter(0)
  %w = f32[8,8]{{1,0}} parameter(1)
  %zero = s32[] constant(0)
  %init = {T} tuple(s32[] %zero, f32[4,8]{{1,0}} %h0, f32[8,8]{{1,0}} %w)
  %outer = {T} while({T} %init), condition=%outer_cond, body=%outer_body
  ROOT %h = f32[4,8]{{1,0}} get-tuple-element({T} %outer), index=1
}}
"""  # noqa: E501


def test_nested_loops_multiply() -> None:
    """An outer loop of 4 trips around a 16-trip loop runs the inner body 64 times."""
    assert len(parse_module(NESTED)[1]) == 5
    cost = step_cost(NESTED)
    assert cost.loop_trips == [4, 16]
    assert cost.flops["matmul"] == DOT * 4 * 16
    assert sum(k.count for k in cost.kernels if k.op == "matmul") == 64


def test_a_loop_writes_one_time_step_of_its_stacked_outputs() -> None:
    """A recurrent layer stacks its outputs with a dynamic-update-slice a trip: XLA updates the
    buffer in place, so a trip writes one step (128 B), not the whole [16,4,8] (2,048 B), and
    reading one step of the inputs reads that step, not all 16."""
    body = """HloModule stack

%body (p: (s32[], f32[16,4,8], f32[16,4,8])) -> (s32[], f32[16,4,8], f32[16,4,8]) {
  %p = (s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) %p), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one)
  %z = s32[] constant(0)
  %xs = f32[16,4,8]{2,1,0} get-tuple-element((s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) %p), index=1
  %ys = f32[16,4,8]{2,1,0} get-tuple-element((s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) %p), index=2
  %x = f32[1,4,8]{2,1,0} dynamic-slice(f32[16,4,8]{2,1,0} %xs, s32[] %i, s32[] %z, s32[] %z), dynamic_slice_sizes={1,4,8}
  %y = f32[1,4,8]{2,1,0} tanh(f32[1,4,8]{2,1,0} %x)
  %ys2 = f32[16,4,8]{2,1,0} dynamic-update-slice(f32[16,4,8]{2,1,0} %ys, f32[1,4,8]{2,1,0} %y, s32[] %i, s32[] %z, s32[] %z)
  ROOT %out = (s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) tuple(s32[] %next, f32[16,4,8]{2,1,0} %xs, f32[16,4,8]{2,1,0} %ys2)
}

%cond (p: (s32[], f32[16,4,8], f32[16,4,8])) -> pred[] {
  %p = (s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) %p), index=0
  %c = s32[] constant(16)
  ROOT %test = pred[] compare(s32[] %i, s32[] %c), direction=LT
}

ENTRY %main (xs: f32[16,4,8], ys: f32[16,4,8]) -> f32[16,4,8] {
  %xs = f32[16,4,8]{2,1,0} parameter(0)
  %ys = f32[16,4,8]{2,1,0} parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) tuple(s32[] %zero, f32[16,4,8]{2,1,0} %xs, f32[16,4,8]{2,1,0} %ys)
  %loop = (s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) while((s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) %init), condition=%cond, body=%body
  ROOT %r = f32[16,4,8]{2,1,0} get-tuple-element((s32[], f32[16,4,8]{2,1,0}, f32[16,4,8]{2,1,0}) %loop), index=2
}
"""  # noqa: E501
    cost = step_cost(body)
    assert cost.loop_trips == [16]
    step = 4 * 8 * 4  # one time step, f32
    # the dynamic-slice, tanh and dynamic-update-slice fuse into one kernel a trip: it reads
    # one step of xs (not 16) and writes one step of ys in place (not 16)
    stacked = [k for k in cost.kernels if k.elements == 4 * 8 and k.count == 16]
    assert [k.bytes for k in stacked] == [step + step + 4 + 4]  # and the two s32 indices
    assert cost.flops["elementwise"] == (4 * 8 + 1) * 16 + 17


CASES = rec.GATES_AND_UNITS


@pytest.mark.parametrize("name", sorted(CASES))
def test_recurrent_training_steps_match_the_analytic_count(name: str) -> None:
    """Counted once a step before loops were counted, an LSTM read 1/16 of its work."""
    from gpuscout.predict.profile_trace import tracer

    ir = tracer("tensorflow").trace_user_step(f"{MODELS}:{name}", 4, "fp32")
    cost = step_cost(ir.hlo, forward_scope=ir.model_name)
    assert cost.loop_trips == [rec.SEQ, rec.SEQ]  # the forward loop and its gradient's
    assert not cost.flops_lower_bound
    # the tolerance; TensorFlow 2.21 and JAX 0.10.2 count it exactly
    analytic = rec.training_matmul_flops(*CASES[name], 4)
    assert cost.flops["matmul"] == pytest.approx(analytic, rel=0.10)


_ON_JAX = """
import json, sys
from gpuscout.measure.backends.jax.hlo import user_step_hlo
from gpuscout.predict.hlo import step_cost
out = {}
for name in sys.argv[2:]:
    ir = user_step_hlo(sys.argv[1] + ":" + name, 4, "fp32")
    cost = step_cost(ir.hlo, ir.model_name)
    out[name] = [cost.loop_trips, cost.flops["matmul"]]
print(json.dumps(out))
"""


def test_recurrent_steps_traced_on_jax_count_the_same() -> None:
    """Keras on JAX runs a recurrent layer as ``lax.scan``: a while of SEQ trips in HLO."""
    pytest.importorskip("jax", reason="the JAX tracer needs pip install 'gpuscout[jax]'")
    # LLVM's optimisation off: only the HLO is read, never a speed (the variables'
    # initialisers are what XLA compiles here, each optimised for nothing at the default level)
    flags = (
        "--xla_backend_optimization_level=0 "
        "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": flags}
    done = subprocess.run(
        [sys.executable, "-c", _ON_JAX, str(MODELS), *sorted(CASES)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for name, (gates, units) in CASES.items():
        trips, flops = out[name]
        assert trips == [rec.SEQ, rec.SEQ]
        assert flops == pytest.approx(rec.training_matmul_flops(gates, units, 4), rel=0.10)
