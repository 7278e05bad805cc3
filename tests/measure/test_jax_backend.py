"""The JAX backend on CPU: the same Keras workloads trained by a jitted stateless step, through
the same protocol, stored and compared like TensorFlow runs (issue 19)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_in_process
from tests.measure.jax_cache import jax_compile_once, jax_compiled  # noqa: F401  (fixtures)

pytest.importorskip("jax", reason="the JAX backend's tests need pip install 'gpuscout[jax]'")

# Small sizes so that each workload compiles and trains in seconds on 2 CPU cores.
SMALL = {
    "mlp": ({}, 64),
    "cnn-small": ({}, 16),
    "resnet50": ({"image_size": 32, "classes": 10}, 16),
    "bert-base": ({"seq_len": 16, "layers": 2, "hidden": 64, "heads": 2, "ffn": 128,
                   "vocab": 500}, 8),
    "gpt2": ({"seq_len": 16, "layers": 1, "hidden": 64, "heads": 2, "ffn": 128, "vocab": 500}, 4),
}  # fmt: skip

_TRAIN = """
import json, sys
from gpuscout.measure.backends.jax.backend import losses
from gpuscout.measure.backends.jax.hlo import step_hlo
from gpuscout.measure.backends.keras.models import BUILDERS
from gpuscout.predict.hlo import step_cost
from gpuscout.workloads import get_workload
import keras
cases = json.loads(sys.argv[1])
out = {"backend": keras.backend.backend(), "losses": {}, "flops": {}}
for name in json.loads(sys.argv[2]):
    dims, batch = cases[name]
    ir = step_hlo(name, dims, batch, "mixed_float16")
    cost = step_cost(ir.hlo, ir.model_name)
    out["flops"][name] = {"matmul": cost.flops["matmul"], "params": ir.params,
                          "saved": cost.saved_activation_bytes, "by": ir.tf_version}
for name, (dims, batch) in cases.items():
    if name != "resnet50":  # built below; its step's XLA compile alone took 30 s of CPU
        out["losses"][name] = losses(get_workload(name), dims, "fp32", batch, 5)
# data parallel on the 2 host devices: the same losses as one device, an all-reduce compiled in
import jax
from gpuscout.measure.backends.jax import sharding
from gpuscout.measure.backends.jax.step import train_step
from gpuscout.measure.synthetic import arrays
from gpuscout.scale import distribute
mlp = get_workload("mlp")
out["split"] = [losses(mlp, {}, "fp32", 64, 3, devices=n) for n in (1, 2)]
mesh = sharding.start(jax, distribute.Plan(distribute.JAX_SHARDING, count=2))
step, state = train_step(jax, BUILDERS["mlp"](mlp.resolve({})), "fp32", replicas=mesh)
x, y = jax.device_put(arrays(mlp, mlp.resolve({}), 64, 0), mesh.split())
hlo = step.lower(state, x, y).compile().as_text()
out["all_reduce"] = "all-reduce" in hlo
out["placed"] = [len(x.devices()), len(jax.tree_util.tree_leaves(state)[0].devices())]
# what ResNet-50's step has that the others' lack, BatchNormalization, on a tiny model: its
# moving statistics are non-trainable state that each step must hand back updated
import numpy as np
from gpuscout.measure.backends.keras.models import Built
bn = keras.Sequential([keras.Input((8,)), keras.layers.Dense(8), keras.layers.BatchNormalization(),
                       keras.layers.Dense(2)])
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
step, state = train_step(jax, Built(bn, loss, keras.optimizers.SGD(0.05)), "fp32")
x, y = np.random.default_rng(0).random((16, 8), "float32"), np.arange(16) % 2
stats = [np.array(v) for v in state[1]]  # copied: the step donates its state's buffers
out["losses"]["batch-norm"] = []
for _ in range(5):
    state, value = step(state, x, y)
    out["losses"]["batch-norm"].append(float(value))
out["stats_moved"] = [not np.allclose(a, b) for a, b in zip(stats, state[1])]
keras.mixed_precision.set_global_policy("mixed_float16")
model = BUILDERS["mlp"](get_workload("mlp").resolve({})).model
out["dtypes"] = [model.layers[0].compute_dtype, model.layers[-1].compute_dtype]
keras.mixed_precision.set_global_policy("float32")
out["tensorflow_imported"] = "tensorflow" in sys.modules  # (the user's file below imports it)
# the user's model and the forward pass, traced on JAX for predict
from gpuscout.measure.backends.jax import hlo as jax_hlo
user = jax_hlo.user_step_hlo(sys.argv[3], 8, "fp32")
fwd = jax_hlo.forward_hlo("mlp", None, {}, 8, "fp32")
out["user"] = [user.params, step_cost(user.hlo, user.model_name).flops["matmul"]]
# compiled with loss="mse": a loss function that gives a loss per sample, made the batch mean
reg = jax_hlo.user_step_hlo(sys.argv[4], 8, "fp32")
out["regressor"] = [reg.params, step_cost(reg.hlo, reg.model_name).flops["matmul"]]
out["forward"] = [fwd.params, step_cost(fwd.hlo, fwd.model_name).flops["matmul"]]
from gpuscout.predict.profile_trace import get_profile
jax_profile = get_profile("mlp", {}, 64, "fp32", backend="jax")
out["profile"] = [jax_profile.backend, jax_profile.method, jax_profile.flops["matmul"]]
print(json.dumps(out))
"""


FLOP_CASES = ("mlp", "cnn-small", "bert-base")
MODELS = Path(__file__).parents[1] / "data" / "user_models.py"
USER_MODEL = f"{MODELS}:uncompiled_classifier"
NUMPY_DATA = Path(__file__).parents[1] / "data" / "numpy_data.py"


def _start_on_jax(script: str, *args: str) -> subprocess.Popen[str]:
    # one thread: the other test process keeps its core (XLA's CPU thread pool takes all)
    # and two host devices for the data-parallel step (one device is still the default)
    # (first: XLA ignores every flag after a word without "--").
    # LLVM's optimisation off (level 0): these processes check losses, counts and HLO, never a
    # speed, and half their CPU time was LLVM optimising each step's machine code (GPT-2's
    # step compiled in 7.7 CPU-s, 2.9 at level 0). The HLO counted and the partitioner's
    # all-reduce are XLA's own passes, before LLVM, so they are the same at every level.
    flags = (
        "--xla_backend_optimization_level=0 --xla_force_host_platform_device_count=2 "
        "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": flags}
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip


def _result(proc: subprocess.Popen[str]) -> dict:  # type: ignore[type-arg]
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _on_jax(script: str, *args: str) -> dict:  # type: ignore[type-arg]
    return _result(_start_on_jax(script, *args))


def test_every_workload_trains_on_jax_and_counts_what_tensorflow_counts() -> None:
    """In one process on JAX (JAX and Keras start once): each built-in workload (small sizes)
    takes 5 steps on one batch and its loss falls, so the step really computes gradients and
    applies them; mixed precision runs the layers in float16 and keeps the last in float32.
    ResNet-50 is only built, for its BatchNormalization note: what its step adds to the
    others', BatchNormalization's moving statistics, is trained on a tiny model, whose step
    hands them back updated (ResNet-50 trains on JAX in scripts/gpu_acceptance.sh, on a GPU).
    Then the same Keras step traced by each backend and read by the same HLO parser gives the
    same matmul and convolution FLOPs and parameters (the TensorFlow counts are checked against
    the analytic ones in tests/predict/test_hlo.py), as do a user's model and the forward
    pass. Split over two devices (a jax.sharding Mesh), the step gives one device's losses
    and its compiled HLO all-reduces the gradients."""
    from gpuscout.measure.backends.tensorflow.hlo import forward_hlo, step_hlo, user_step_hlo
    from gpuscout.predict.hlo import step_cost

    running = _start_on_jax(_TRAIN, json.dumps(SMALL), json.dumps(FLOP_CASES), USER_MODEL,
                            f"{MODELS}:compiled_regressor")  # fmt: skip
    on_tf = {}  # traced here while the JAX process works
    for name in FLOP_CASES:
        dims, batch = SMALL[name]
        ir = step_hlo(name, dims, batch, "mixed_float16")
        on_tf[name] = (ir.params, step_cost(ir.hlo, ir.model_name).flops["matmul"])
    user = user_step_hlo(USER_MODEL, 8, "fp32")
    fwd = forward_hlo("mlp", None, {}, 8, "fp32")
    # The note counts Keras layers, so ResNet-50 is built here, on TensorFlow (1 s): on JAX
    # each of its initializers compiles (12 s)
    from gpuscout.measure.backends.jax.sharding import batch_norm_note
    from gpuscout.measure.backends.keras.models import BUILDERS
    from gpuscout.workloads import get_workload

    notes = [
        batch_norm_note(BUILDERS[n](get_workload(n).resolve(SMALL[n][0])).model)
        for n in ("mlp", "resnet50")
    ]
    out = _result(running)
    assert out["user"] == [
        user.params,
        pytest.approx(step_cost(user.hlo, user.model_name).flops["matmul"], rel=1e-9),
    ]
    # 12 -> 8 -> 1, batch 8: 113 parameters; matmuls of the forward pass and of the weights'
    # gradients, 2 x 8 x (12x8 + 8x1) each, and the gradient into the second layer's input
    # (none into the data): the step traced, so its loss is a scalar
    assert out["regressor"] == [113, pytest.approx(2 * (2 * 8 * (12 * 8 + 8)) + 2 * 8 * 8)]
    assert out["forward"] == [
        fwd.params,
        pytest.approx(step_cost(fwd.hlo, fwd.model_name).flops["matmul"], rel=1e-9),
    ]
    assert not out["tensorflow_imported"]  # not even to seed (Keras would, for tf.data)
    from gpuscout.predict.profile_trace import get_profile

    backend, method, matmul = out["profile"]  # predict --backend jax's profile
    assert backend == "jax" and "jitted JAX train step" in method
    assert matmul == pytest.approx(get_profile("mlp", {}, 64, "fp32").flops["matmul"], rel=1e-9)
    assert out["backend"] == "jax"
    for name, losses in out["losses"].items():
        assert len(losses) == 5 and all(v == v for v in losses), name  # no NaN
        assert losses[-1] < losses[0], (name, losses)
    assert out["stats_moved"] == [True, True]  # BatchNormalization's moving mean and variance
    assert out["dtypes"] == ["float16", "float32"]
    one, split = out["split"]  # the global batch's mean loss and gradients, split over 2
    assert split == pytest.approx(one, rel=1e-5) and split[-1] < split[0]
    assert out["all_reduce"] and out["placed"] == [2, 2]  # batch split, state on both
    no_bn, resnet = notes  # said: synchronised over the replicas, unlike TF's
    assert no_bn is None and "the 53 BatchNormalization layers' statistics" in resnet
    for name, (params, tf_matmul) in on_tf.items():
        counted = out["flops"][name]
        assert counted["by"].startswith("jax ")
        assert counted["params"] == params, name
        assert counted["matmul"] == pytest.approx(tf_matmul, rel=1e-9), name
        assert counted["saved"] > 0, name  # the forward pass was found by its scope


def test_a_jax_run_is_measured_stored_and_says_its_backend(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.sqlite")
    args = ("--workload", "mlp", "--precision", "mixed_bfloat16", "--steps", "12", "--loop", "fit")
    # in this process (stderr a real file): the measuring child is the JAX process tested
    r = run_in_process("bench", "--backend", "jax", *args, "--warmup-steps", "3", "--db", db,
                       "--json", stderr_file=True)  # fmt: skip
    assert r.code == 0, r.err
    run = r.json()
    assert run["status"] == "ok" and run["backend"] == "jax" and run["config"]["backend"] == "jax"
    assert run["xla"] is True  # every JAX step is compiled by XLA
    assert run["env"]["keras_backend"] == "jax" and run["env"]["jax"]
    assert run["env"]["precision"] == "mixed_bfloat16"
    assert run["device"] == "CPU:0" and run["measured_steps"] == 12
    assert run["loop"] == "fit" and any("model.fit" in a for a in run["assumptions"])
    assert run["samples_per_second"]["median"] > 0 and run["mfu"] > 0
    assert "tensorflow" not in run["env"]  # the JAX child never started TensorFlow
    shown = run_in_process("runs", "show", str(run["id"]), "--db", db, "--json")
    assert shown.code == 0 and shown.json()["backend"] == "jax"


def test_what_jax_cannot_do_is_refused_by_name() -> None:
    """In a fresh process with every framework blocked (the other refusals are rows of
    tests/adversarial/test_backend_rows.py, in process)."""
    flag = "--serving saved_model"  # (--workers runs on JAX now: tests/measure/test_jax_workers)
    args = ("--workload", "mlp", "--mode", "inference", "--serving", "saved_model")
    r = run_cli("bench", "--backend", "jax", *args, block_tf=True)
    assert r.code == 2, r.err
    assert f"--backend jax does not take {flag}" in r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) <= 2


def test_a_jax_scaling_sweep_splits_the_global_batch_over_a_mesh_of_host_devices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--devices 2 --scaling 1,2`` on a machine without GPUs: the measuring child splits the
    CPU into XLA host devices before JAX starts (the user's XLA_FLAGS kept, the count put
    first), each count is its own stored run with the global batch and its efficiency, and
    the output says the devices share the cores."""
    # a user's flags that end XLA's reading early: a device count put after them is ignored
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism=1")
    db = str(tmp_path / "runs.sqlite")
    few = ("--steps", "8", "--warmup-steps", "2", "--batch-size", "16", "--db", db, "--json")
    r = run_in_process("bench", "--backend", "jax", "--workload", "mlp", "--devices", "2",
                       "--scaling", "1,2", *few, stderr_file=True)  # fmt: skip
    assert r.code == 0, r.err
    one, two = r.json()
    assert [one["device"], two["device"]] == ["CPU:0", "CPU:0,CPU:1"]
    spread = two["distribution"]
    assert spread["strategy"] == "jax.sharding" and spread["logical_devices"] is True
    assert (spread["replicas"], spread["per_replica_batch"], spread["global_batch"]) == (2, 16, 32)
    assert two["batch_size"] == 32 and two["mfu"] is None  # no peak adds up on shared cores
    assert spread["scaling"]["base_run_id"] == one["id"] and spread["scaling"]["efficiency"]
    said = " ".join(two["assumptions"])
    assert "XLA's SPMD partitioner compiles the gradient all-reduce" in said
    assert "share its cores" in said and "batch 16 per replica, 32 global" in said
    assert "placed on the devices once" in said
    assert "placed on the device once" in " ".join(one["assumptions"])


def test_predict_on_jax_without_jax_is_one_line() -> None:
    r = run_cli("predict", "--backend", "jax", "--workload", "mlp", block_tf=True)
    assert r.code == 2 and "predict --backend jax needs JAX" in r.err
    assert "pip install 'gpuscout[jax]'" in r.err and "Traceback" not in r.err


def test_a_missing_jax_is_one_line_with_the_install_command() -> None:
    """JAX blocked from import (as if not installed): one line, the pip command, exit 2."""
    r = run_cli("bench", "--backend", "jax", "--workload", "mlp", "--steps", "3", block_tf=True)
    assert r.code == 2
    assert "needs JAX, which is not installed" in r.err
    assert "pip install 'gpuscout[jax]'" in r.err and "Traceback" not in r.err


def test_older_runs_read_as_tensorflow() -> None:
    from gpuscout.core.records import RunResult
    from tests.report.runs import report_runs

    run = report_runs()[0]
    raw = run.to_json_dict()
    raw.pop("backend")
    raw["config"].pop("backend")
    old = RunResult.model_validate(raw)
    assert old.backend == "tensorflow" and old.config.backend == "tensorflow"


def test_runs_that_differ_only_in_backend_are_ranked_with_a_ratio() -> None:
    """A TensorFlow and a JAX run of the same workload, precision and batch: the backend is the
    question, so they are ranked, with b/a and its interval; XLA and the framework versions go
    with the backend. Two JAX runs with different XLA settings or versions still are not."""
    from gpuscout.core.comparison import compare
    from gpuscout.core.records import Interval
    from tests.report.runs import report_runs

    tf_run = next(r for r in report_runs() if r.status == "ok" and r.samples_per_second)
    tf_run = tf_run.model_copy(update={"env": {**tf_run.env, "tensorflow": "2.21.0"}})
    jax_run = tf_run.model_copy(
        update={
            "backend": "jax",
            "config": tf_run.config.model_copy(update={"backend": "jax", "xla": True}),
            "xla": True,
            "env": {**{k: v for k, v in tf_run.env.items() if k != "tensorflow"}, "jax": "0.10"},
            "samples_per_second": Interval(median=2000.0, ci_low=1900.0, ci_high=2100.0),
        }
    )
    c = compare(tf_run, jax_run)
    assert c.comparable and c.across_backends and c.speedup is not None
    assert {d.what for d in c.differences} >= {"backend", "XLA", "tensorflow", "jax"}
    assert not any(d.blocks for d in c.differences)
    assert c.speedup.ci_low is not None and c.speedup.ci_low < c.speedup.median
    other = jax_run.model_copy(update={"env": {**jax_run.env, "jax": "0.11"}})
    assert not compare(jax_run, other).comparable


def test_float16_on_a_cpu_is_refused_with_what_works() -> None:
    # refused by the JAX measuring child (it reads the device): that child is real, the
    # command around it runs in this process
    r = run_in_process("bench", "--backend", "jax", "--precision", "mixed_float16", "--steps",
                       "3", stderr_file=True)  # fmt: skip
    assert r.code == 2, r.err
    assert "mixed_float16 on JAX needs a GPU" in r.err and "mixed_bfloat16" in r.err
    assert "Traceback" not in r.err


def test_scout_on_jax_without_jax_says_so_before_measuring(tmp_path: Path) -> None:
    r = run_cli("scout", "--backend", "jax", "--measure", "input-bound-demo=5", "--html",
                str(tmp_path / "r.html"), block_tf=True)  # fmt: skip
    assert r.code == 2 and "needs JAX, which is not installed" in r.err, r.err
    assert not (tmp_path / "r.html").exists()


# Any import of TensorFlow in the process fails (JAX runs need none of it).
_NO_TF = """
class _NoTF:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'tensorflow':
            raise ImportError('blocked by the test: ' + name)
sys.meta_path.insert(0, _NoTF())
"""

# Two users' model.fit in one Keras-on-JAX process (JAX and Keras start once): one timed and
# stored by ScoutCallback, then one per steps_per_execution (4 and 1), timed and counted.
_CALLBACKS = (
    "import json, sys\n"
    + _NO_TF
    + """
import numpy as np
import keras
from gpuscout.keras import ScoutCallback
from gpuscout.measure.backends.keras.callback import FitTimer
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = np.random.default_rng(0).random((640, 8), dtype=np.float32)
y = (x[:, 0] > 0.5).astype("int32")
printed = []
cb = ScoutCallback(batch_size=32, db=sys.argv[1], predict_on=("h100-sxm",),
                   print_fn=printed.append)
model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[cb])
fit = {**cb.result.to_json_dict(), "printed": printed[0], "predicted": len(cb.predictions)}
x = np.random.default_rng(0).random((320, 8), dtype=np.float32)  # 10 batches of 32
y = (x[:, 0] > 0.5).astype("int32")
out = {}
for k in (4, 1):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", steps_per_execution=k,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = (ScoutCallback(batch_size=32, store=False, predict_on=(), print_fn=lambda s: None)
          if k == 4 else FitTimer(batch_size=32))
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[cb])
    r = cb.result
    measured = cb.times[r.warmup.steps:]
    calls = getattr(cb, "durations", None)  # (None: a callback that counts no executions)
    out[k] = {"times": len(cb.times), "callbacks": calls and len(calls),
              "steps": getattr(cb, "steps", None),
              "ran": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
              "measured": r.measured_steps, "warmup": r.warmup.steps, "status": r.status,
              "stored_times": len(r.step_times_s), "measured_time": sum(measured),
              "mean_sps": r.mean_samples_per_second, "sps": r.samples_per_second.median,
              "median": r.step_time_s.median, "assumptions": r.assumptions}
print(json.dumps({"fit": fit, "per_execution": out}))
"""
)


def test_scout_callback_on_jax_records_its_backend_and_counts_steps_per_execution(
    tmp_path: Path,
) -> None:
    """One Keras-on-JAX process, TensorFlow blocked from import in it, checks two facets of
    ScoutCallback in a user's model.fit (they were two tests, two JAX start-ups):

    - the run it stores says jax, with JAX's device; other GPUs are predicted from the step
      traced on JAX; and TensorFlow is never imported for it;
    - on JAX too Keras calls back once per execution of steps_per_execution=4 steps, and
      gives the last of an epoch of 10 batches (2 steps) the index of a 4th: every batch is
      counted, as many as with steps_per_execution=1 (counts only, never a speed).
    """
    db = str(tmp_path / "runs.sqlite")
    both = _on_jax(_CALLBACKS, db)
    run = both["fit"]
    assert run["status"] == "ok" and run["backend"] == "jax" and run["config"]["backend"] == "jax"
    assert run["device"] == "CPU:0" and run["env"]["keras_backend"] == "jax"
    assert run["predicted"] == 1 and "H100" in run["printed"], run["printed"]
    listed = run_in_process("runs", "list", "--db", db, "--json")
    assert listed.code == 0 and listed.json()[0]["backend"] == "jax"
    four, one = both["per_execution"]["4"], both["per_execution"]["1"]
    assert four["times"] == one["times"] == 30 == four["ran"] == one["ran"]  # 3 epochs of 10
    assert four["steps"] == [4, 4, 2] * 3 and four["callbacks"] == 9
    assert one["steps"] == [1] * 30
    for counted in (four, one):
        assert counted["status"] == "ok"
        assert counted["measured"] + counted["warmup"] == 30 == counted["stored_times"]
        mean = 32 * counted["measured"] / counted["measured_time"]
        assert counted["mean_sps"] == pytest.approx(mean)
        assert counted["sps"] == pytest.approx(32 / counted["median"])
    assert any("steps_per_execution = 4 was counted" in a for a in four["assumptions"])


def test_a_jax_gpus_compute_capability_is_read_for_the_doctors_precisions() -> None:
    """jaxlib's CUDA devices say "9.0"; doctor offers float16/bfloat16 by it (no GPU here, so
    the attribute is planted on a stand-in)."""
    from types import SimpleNamespace

    from gpuscout.measure.backends.jax.runtime import _compute_capability

    assert _compute_capability(SimpleNamespace(compute_capability="9.0")) == (9, 0)
    assert _compute_capability(SimpleNamespace(compute_capability="12.1")) == (12, 1)
    assert _compute_capability(SimpleNamespace()) is None  # a device that does not say
    assert _compute_capability(SimpleNamespace(compute_capability="gfx90a")) is None
