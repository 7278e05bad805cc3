"""A broken training is not a benchmark: NaN/Inf and diverging losses give status "diverged".

Issue 31: ``bench`` stored "ok" for a model whose loss was NaN from the first step and for one
at a learning rate of 1e6. The rule is :mod:`gpuscout.measure.loss_check`'s, shared with soak.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscout.measure.loss_check import GROWTH_LIMIT, LossWatch, finite, nonfinite_text
from gpuscout.measure.protocol import Protocol, StopRule
from tests.conftest import run_cli

MODELS = Path(__file__).parent.parent / "data" / "broken_models.py"
FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8")


def _watch(*losses: float) -> LossWatch:
    watch = LossWatch()
    for loss in losses:
        watch.add(loss)
    return watch


def test_a_falling_or_flat_loss_is_a_training() -> None:
    assert _watch(2.3, 2.1, 1.7, 1.6).verdict() is None
    assert _watch(1e-6, 2e-6, 0.5).verdict() is None  # near zero, below the floor
    assert _watch().verdict() is None  # a loop that gave no loss


def test_a_nan_or_inf_loss_names_its_step() -> None:
    text = _watch(float("nan"), 1.0).verdict()
    assert text is not None and text.startswith("the loss became NaN at step 1 (of 2 steps")
    text = _watch(1.0, 1.1, float("inf")).verdict()
    assert text is not None and "the loss became Inf at step 3" in text


def test_a_loss_grown_by_orders_of_magnitude_is_divergence() -> None:
    just_over = 1.0 * GROWTH_LIMIT * 1.01
    text = _watch(1.0, 50.0, just_over).verdict()
    assert text is not None and "diverged" in text and "from step 3 on" in text
    assert _watch(1.0, GROWTH_LIMIT * 0.99).verdict() is None  # under the limit
    assert _watch(1.0, 5e4, 2.0).verdict() is None  # the last loss decides: it recovered
    both = _watch(1.0, 1e9, float("nan")).verdict()
    assert both is not None
    assert "grew more than 1000 x from step 2 on, then the loss became NaN at step 3" in both


def test_soak_and_bench_share_the_check() -> None:
    assert not finite(float("nan")) and not finite(float("-inf")) and finite(0.0)
    assert nonfinite_text(None, 7) == "the loss became NaN/Inf at step 7"


def test_the_protocol_reads_the_loss_outside_the_timed_step() -> None:
    """The loss is read after the step's time is taken: the fake clock moves only in steps,
    and float() of the loss moves it too; the step times stay exactly one tick."""
    now = [0.0]

    class Loss:
        def __float__(self) -> float:
            now[0] += 100.0  # a slow read would show in a step time
            return math.nan

    def step() -> Loss:
        now[0] += 1.0
        return Loss()

    rule = StopRule(budget_s=None, fixed_steps=3, fixed_warmup=1)
    outcome = Protocol(rule, clock=lambda: now[0]).run(step, returns_loss=True)
    assert outcome.times == (1.0, 1.0, 1.0, 1.0)
    assert outcome.broken is not None and "NaN at step 1 (of 4 steps" in outcome.broken
    plain = Protocol(rule, clock=lambda: now[0]).run(step)  # a loop without a loss
    assert plain.broken is None


# bench storing a NaN-loss and a diverging model as "diverged" (exit 1, the step named, the
# timing kept, the stored message the same) is checked by their rows in
# tests/adversarial/test_child_rows.py (one TensorFlow start-up per case, not two).


def test_a_nan_loss_is_noticed_on_jax(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    model = f"{MODELS}:nan_from_the_first_step"
    r = run_cli("bench", "--backend", "jax", "--model", model, *FAST, "--db", str(tmp_path / "r"))
    assert r.code == 1 and "failed (diverged): the loss became NaN at step 1" in r.err, r.err


def test_weights_on_an_accelerator_are_checked_where_they_are() -> None:
    """The jitted check a GPU's weights get (on_device: one boolean per tensor comes back),
    run on CPU arrays; in a fresh process, as JAX is not imported into the test process."""
    pytest.importorskip("jax")
    code = (
        "import jax.numpy as jnp\n"
        "from gpuscout.measure.backends.keras.weights import on_device\n"
        "print(on_device([jnp.ones(3), jnp.array([1.0, float('nan')]), jnp.zeros((2, 2))]),"
        " on_device([]))\n"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["[True,", "False,", "True]", "[]"]
