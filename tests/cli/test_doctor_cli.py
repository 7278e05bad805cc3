"""``gpuscout doctor`` and ``gpuscout soak`` end to end, as a user runs them (real TensorFlow).

The commands run in this process (``run_in_process``, stderr a real file): what they start,
the measuring child, is the real process a user's command starts; a fresh interpreter for the
parent would only add its start-up. Ctrl-C stays a real process: the signal is what it tests.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest
from rich.console import Console

from gpuscout.diagnose.records import DoctorReport
from gpuscout.report.doctor_view import print_doctor
from tests.conftest import assert_user_errors, leftovers, run_in_process


def test_doctor_calls_the_demo_input_bound_and_measures_each_fix() -> None:
    # 8 steps: 4 blocks of 2 for each mean's interval (a slow step widens it, see test_diagnose);
    # batch 64, and one larger (the default 128 and its search up to 1024 took 20 s more)
    r = run_in_process("doctor", "--workload", "input-bound-demo", "--steps", "8", "--batch-size",
                       "64", "--max-batch", "128", "--json", stderr_file=True)  # fmt: skip
    assert r.code == 0, r.err
    data = r.json()
    assert data["verdict"].startswith("input-bound")
    fixes = data["fixes"]
    assert {"name", "speedup", "code"} <= set(fixes[0])
    by_name = {f["name"]: f for f in fixes}
    # The demo's slow step is its Python preprocessing on every epoch: caching it is the fix,
    # measured faster (no speed picked here). Its 95% interval comes with it; from 8 steps, on
    # a machine busy with other work, its lower end may fall below 1 (it did, 0.86 at a 1.41x
    # speedup, beside a heavy job), so the interval is checked for its shape, not its end.
    cache = by_name["cache"]
    assert cache["speedup_low"] is not None and cache["speedup_high"] is not None, cache
    assert cache["speedup_low"] <= cache["speedup"] <= cache["speedup_high"]
    assert cache["speedup"] > 1.0, cache
    measured = [f for f in fixes if f["speedup"] is not None]
    to_apply = [f["speedup"] for f in measured if not f["in_baseline"]]
    assert to_apply == sorted(to_apply, reverse=True)  # ranked by measured speedup
    base = data["baseline"]["samples_per_second"]
    for f in measured:  # each speedup is the ratio of two measured rates, nothing assumed
        ratio = f["samples_per_second"] / base
        expected = 1 / ratio if f["in_baseline"] else ratio
        assert abs(f["speedup"] - expected) < 1e-9 * expected, f
        assert f["code"]
    mixed = [f for f in fixes if f["name"].startswith("mixed precision")]
    assert mixed and all("in_baseline" not in f["note"] for f in mixed)  # a field, not a word
    assert data["batch_search"] and data["largest_batch"] >= data["batch_size"]
    # The same report in the terminal: the verdict word, the ranking and the code.
    out = io.StringIO()
    report = DoctorReport.model_validate({k: v for k, v in data.items() if k != "verdict"})
    print_doctor(report, Console(file=out, width=200))
    text = out.getvalue()
    assert "input-bound" in text and "fixes, ranked by measured speedup" in text
    assert "dataset = dataset.cache()" in text


def test_doctor_and_soak_reject_bad_input_in_one_line() -> None:
    assert_user_errors(
        [
            (("doctor", "--workload", "input-bound-dem"), "Did you mean 'input-bound-demo'"),
            (("doctor", "--skip", "prefetsh"), "--skip 'prefetsh' is not a fix"),
            (("doctor", "--max-batch", "0"), "--max-batch"),
            (("doctor", "--data", "x.py:f"), "--data needs --model"),
            (("soak", "--minutes", "0"), "--minutes"),
            (("soak", "--max-drift", "1.5"), "must be above 0 and below 1, got 1.5"),
            (("soak", "--workload", "nope"), "unknown workload 'nope'"),
        ]
    )


def _one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A soak trains for a set time, so its CPU time is that time x TensorFlow's busy threads:
    one thread each (TensorFlow reads these in the measuring child) keeps what is tested, the
    verdict from the windows, at a fraction of the CPU beside the other test process."""
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "1")


def test_soak_ends_with_a_verdict_and_stores_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """15 seconds: 5-second windows (soak_loop's shortest), a first and a last one after the
    warm-up (an mlp's takes well under the 5 s left, a slow loaded CPU included), too few to
    measure the machine's noise (4 are needed), so no drift can be ruled out or shown:
    INCONCLUSIVE, exit code 4, never a pass."""
    _one_thread(monkeypatch)
    r = run_in_process("soak", "--minutes", "0.25", "--workload", "mlp", "--json", stderr_file=True)
    data = r.json()
    assert data["verdict"] == "inconclusive" and r.code == 4, (r.code, data["reasons"])
    assert data["noise"] is None and "too short to measure" in data["reasons"][0]
    assert "--minutes 1" in data["reasons"][0]
    assert data["first_window"] and data["last_window"] and data["steps"] > 10
    assert any(e.startswith("throughput: first window") for e in data["evidence"])
    assert any("GPU not monitored" in e for e in data["evidence"])  # no NVML here, said so
    shown = run_in_process("runs", "show", str(data["run_id"]), "--json").json()
    assert shown["stop_reason"] == f"soak: {data['verdict']}"
    assert shown["soak"]["verdict"] == data["verdict"] and shown["monitor"]["samples"] > 0
    table = run_in_process("runs", "show", str(data["run_id"]))
    assert table.code == 0 and "CPU (monitor)" in table.out, table.err


def test_soak_stops_cleanly_on_ctrl_c_and_keeps_what_was_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _one_thread(monkeypatch)
    code = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "soak", "--minutes", "10", "-w", "mlp", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    assert proc.stderr is not None
    seen, deadline = "", time.monotonic() + 120
    while "soak: soaking" not in seen and time.monotonic() < deadline:  # phases go to stderr
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if ready:
            seen += os.read(proc.stderr.fileno(), 1 << 16).decode(errors="replace")
    assert "soak: soaking" in seen, seen
    # Let it train a little: an mlp step takes milliseconds, but the first traces the step;
    # 4 s leaves room for that on a slower CPU with a heavy job beside the suite.
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    data = json.loads(out)
    assert proc.returncode == 3
    assert data["verdict"] == "incomplete" and data["interrupted"] is True
    assert data["steps"] > 0 and data["seconds"] < 600
    shown = run_in_process("runs", "show", str(data["run_id"]), "--json").json()
    assert shown["soak"]["interrupted"] is True
    assert not leftovers()


def test_doctor_on_your_model_passes_the_fixes_to_a_data_function_that_takes_them() -> None:
    models = "tests/data/user_models.py"
    r = run_in_process(
        "doctor",
        "--model",
        f"{models}:uncompiled_classifier",
        "--data",
        f"{models}:dataset_with_knobs",
        "--steps",
        "4",
        "--skip",
        "XLA,tf.function,mixed precision",
        "--max-batch",  # one size past the data's 64 samples: the bisection is test_diagnose's
        "72",
        "--json",
        stderr_file=True,
    )
    assert r.code == 0, r.err
    data = r.json()
    assert data["batch_size"] == 16  # read from the data
    assert any(
        "which applies ['cache', 'parallel', 'prefetch'] itself" in a for a in data["assumptions"]
    )
    names = {f["name"]: f for f in data["fixes"]}
    assert {"prefetch", "parallel map", "cache"} <= set(names)
    assert all(names[n]["speedup"] is not None for n in ("prefetch", "parallel map", "cache"))
    # 64 samples: a batch of 72 has no data to fill it, so the search stops below it.
    assert [tuple(t) for t in data["batch_search"]] == [(32, True), (64, True), (72, False)]
    assert data["largest_batch"] == 64
    assert not any(f["name"] in ("XLA", "tf.function") for f in data["fixes"])
