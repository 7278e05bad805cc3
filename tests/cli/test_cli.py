"""The command line, end to end: success, the JSON contract, bad input.

A command that measures runs in this process (``run_in_process``) unless what is tested is
the command's own process (its stdout as a file descriptor, its signals): the measuring child
that imports TensorFlow is a real process either way, and a fresh interpreter for the command
itself cost a second more each. Refusals run in this process too, with the check that they
import no TensorFlow (``assert_user_errors``); ``--help`` and ``runs list`` are checked with it
blocked in a fresh interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

from gpuscout.store import Store
from tests.conftest import CliResult, assert_user_errors, run_cli, run_in_process

DATA = Path(__file__).parent.parent / "data"
FAST = ("--steps", "5", "--warmup-steps", "1", "-b", "8")
# A builder that never gets to build runs on the cheaper measuring child (bare_builders.py).
CHEAPEST = "jax" if importlib.util.find_spec("jax") is not None else "tensorflow"


def _measure(*args: str) -> CliResult:
    """``gpuscout ARGS`` in this process, its measuring child a real one."""
    return run_in_process(*args, stderr_file=True)


def test_help_does_not_import_tensorflow() -> None:
    r = run_cli("--help", block_tf=True)
    assert r.code == 0, r.err
    assert "bench" in r.out and "runs" in r.out
    r = run_cli("bench", "--help", block_tf=True)
    assert r.code == 0 and "--precision" in r.out


def test_runs_list_does_not_import_tensorflow() -> None:
    r = run_cli("runs", "list", block_tf=True)
    assert r.code == 2 and "no results database at" in r.err, r.err


def test_bench_json_contract_and_runs_list() -> None:
    """The run's JSON, then the stored run read back (in this process: ``runs`` without
    TensorFlow is checked blocked by the tests above). That nothing but the JSON reaches the
    command's stdout file descriptor, whatever the child prints, is
    test_user_model_output_does_not_corrupt_json's (a fresh interpreter)."""
    r = _measure("bench", "--workload", "mlp", "--seconds", "3", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)  # stdout is one JSON object and nothing else
    assert isinstance(out, dict)
    for key in (
        "schema_version",
        "id",
        "status",
        "workload",
        "device",
        "precision",
        "xla",
        "batch_size",
        "samples_per_second",
        "step_time_s",
        "cv",
        "warmup",
        "measured_steps",
        "stop_reason",
        "flops_per_step",
        "tflops",
        "mfu",
        "epoch_seconds",
        "peak_memory_bytes",
        "env",
    ):
        assert key in out, key
    sps = out["samples_per_second"]
    assert sps["ci_low"] <= sps["median"] <= sps["ci_high"]
    assert set(out["step_time_s"]) >= {"median", "p5", "p95"}
    assert set(out["warmup"]) >= {"steps", "seconds"}
    # On a CPU the peak is measured once and cached; measured while the machine was busy (the
    # suite runs two workers), a later run can exceed it, and then it must say so (CI found
    # 1.02 once, on a loaded fresh clone).
    above = any("MFU above 100%" in w for w in out["warnings"])
    assert 0 < out["mfu"] < 1 or (out["mfu"] >= 1 and above)
    assert out["stop_reason"] in ("converged", "budget")
    assert out["epoch_seconds"] == pytest.approx(60_000 / sps["median"])
    assert out["env"]["tensorflow"].startswith("2.") and out["env"]["keras"].startswith("3.")
    assert "step_times_s" not in out
    # Energy of the measured steps: a figure where the counters are readable (RAPL on a CPU,
    # NVML on a GPU), else why not, in one line (this machine: no /sys/class/powercap).
    energy = out["energy"]
    if energy["source"] is None:
        assert energy["reason"] and energy["joules"] is None
    else:
        assert energy["joules_per_sample"] > 0 and energy["reason"] is None
        assert energy["joules"] == pytest.approx(sum(d["joules"] for d in energy["devices"]))

    listed = run_in_process("runs", "list", "--json").json()
    assert [row["id"] for row in listed] == [out["id"]]
    shown = run_in_process("runs", "show", str(out["id"]), "--json", "--steps").json()
    assert shown["samples_per_second"] == sps
    assert len(shown["step_times_s"]) >= out["measured_steps"] + out["warmup"]["steps"]
    table = run_in_process("runs", "show", str(out["id"]))
    assert "samples/s" in table.out and "95% CI" in table.out
    flat = " ".join(table.out.split())  # the table may wrap a long row
    assert ("samples/J), from" in flat) if energy["source"] else ("energy │ not reported (" in flat)


def test_bench_prints_the_summary_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # as run_cli sets it: the table is not wrapped
    r = _measure("bench", "--workload", "cnn-small", *FAST)
    assert r.code == 0, r.err
    assert "samples/s (median)" in r.out and "assumptions" in r.out
    assert "stopped: steps" in r.out


def test_quiet() -> None:
    r = _measure("bench", "--workload", "mlp", "-q", *FAST)
    assert r.code == 0, r.err
    assert r.out.startswith("run 1: ok, ")
    assert r.err.startswith("gpuscout: new results database at ")  # the one line: where
    assert len(r.err.strip().splitlines()) == 1


def _one_line_error(r) -> str:  # type: ignore[no-untyped-def]
    assert r.code == 2, (r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err
    return lines[0]


def test_bench_refuses_bad_input_before_measuring() -> None:
    """Each in one line, exit 2, with no TensorFlow imported (assert_user_errors)."""
    assert_user_errors(
        [
            (("bench", "--workload", "resnet"), "unknown workload 'resnet'"),
            (("bench", "--workload", "resnet"), "Did you mean 'resnet50'?"),
            (("bench", "--workload", "resnet"), "mlp, cnn-small, resnet50, resnet50-v1.5, bert"),
            (("bench", "--model", "nowhere/model.py:build"), "'nowhere/model.py' does not exist"),
            *((("bench", "--batch-size", v), "--batch-size") for v in ("0", "-3", "ten")),
            *(
                (("bench", "--batch-size", v), says)
                for v, says in (("0", "got 0"), ("-3", "got -3"), ("ten", "'ten'"))
            ),
            (("bench", "--data", f"{DATA}/user_models.py:dataset"), "--data needs --model"),
            (("bench", "-w", "mlp", "--seq-len", "64"), "workload 'mlp' has no setting 'seq_len'"),
        ]
    )


# A builder that returns no model (``returned dict, not a keras.Model``): the message is
# tests/measure/test_backend.py::test_model_function_returning_something_else's, and a
# builder's refusal raised in the measuring child reaching the command as one line with exit
# 2 is tests/adversarial/test_child_rows.py's (the forks_then_fails row).


def test_unknown_device() -> None:
    line = _one_line_error(_measure("bench", "--device", "GPU:3", *FAST))
    assert "unknown device 'GPU:3'" in line and "CPU:0" in line


def test_oom_is_stored_with_advice(tmp_path: Path) -> None:
    db = tmp_path / "oom.sqlite"
    model = f"{DATA}/user_models.py:runs_out_of_memory"
    r = _measure("bench", "--model", model, "-b", "64", "--db", str(db), "--json")
    assert r.code == 1
    out = r.json()
    assert out["status"] == "oom" and "Try --batch-size 32" in out["message"]
    assert "Traceback" not in r.err
    row = sqlite3.connect(db).execute("select status, batch_size from runs").fetchone()
    assert row == ("oom", 64)


def test_bad_db_path(tmp_path: Path) -> None:
    assert_user_errors([(("runs", "list", "--db", str(tmp_path)), "is a directory")])


def test_bad_db_file_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"not sqlite" * 200)
    assert_user_errors([(("runs", "list", "--db", str(path)), "cannot open the database")])
    assert path.read_bytes() == b"not sqlite" * 200


def test_runs_show_unknown_id(tmp_path: Path) -> None:
    # nothing stored yet, and nothing created
    assert_user_errors([(("runs", "show", "42"), "no results database at")])
    Store(tmp_path / "runs.sqlite").close()
    assert_user_errors([(("runs", "show", "42"), "no run with id 42")])


def test_version() -> None:
    r = run_in_process("--version")
    assert r.code == 0 and r.out.startswith("gpuscout ")


def test_a_crashed_measurement_is_stored(tmp_path: Path) -> None:
    """The measuring child is SIGKILLed while building: the run is stored as an error. On
    the cheaper child (JAX, where installed): what is tested is the runner's, not a backend's."""
    db = tmp_path / "crash.sqlite"
    model = f"{DATA}/bare_builders.py:crashes_the_process"
    r = _measure("bench", "--backend", CHEAPEST, "--model", model, "--db", str(db), "--json")
    assert r.code == 1, r.err
    out = r.json()
    assert out["status"] == "error" and "killed by SIGKILL" in out["message"]
    assert sqlite3.connect(db).execute("select status from runs").fetchone() == ("error",)


def test_user_model_output_does_not_corrupt_json() -> None:
    """In a fresh interpreter, as the only test here: the child's stdout is the command's
    stderr, so what the user's model prints cannot corrupt the JSON on the command's stdout
    file descriptor (in this process, a leak would bypass the captured ``sys.stdout``).
    The same run checks that an emulated precision runs, with a warning saying so."""
    model = f"{DATA}/user_models.py:prints_to_stdout"
    r = run_cli("bench", "--model", model, "--precision", "mixed_float16", "--json", *FAST)
    assert r.code == 0, r.err
    out = r.json()
    assert out["status"] == "ok" and out["precision"] == "mixed_float16"
    assert any("emulated" in w for w in out["warnings"]), out["warnings"]
    assert "hello from the user's model" in r.err


def test_terminated_run_is_stored_and_leaves_no_process(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    db = tmp_path / "term.sqlite"
    code = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen(
        # A fixed, huge step count: a time budget may end early once the interval is tight,
        # which raced the SIGTERM below on a quiet machine.
        [sys.executable, "-c", code, "bench", "-w", "mlp", "--steps", "100000000", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    child = None
    while time.monotonic() < deadline and child is None:  # wait for the measuring child
        time.sleep(0.5)
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
        child = int(out.stdout.split()[0]) if out.stdout.strip() else None
    assert child is not None
    time.sleep(5)  # let it get into the measurement
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 1
    row = sqlite3.connect(db).execute("select status, result_json from runs").fetchone()
    assert row[0] == "error" and "interrupted" in json.loads(row[1])["message"]
    time.sleep(0.5)
    try:
        os.kill(child, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "the measuring child outlived its parent"
