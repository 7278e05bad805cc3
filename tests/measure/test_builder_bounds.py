"""A user's builder is bounded wherever it runs (issue 43): ``predict``, ``cost``, ``advise``,
``report`` and ``scout`` trace a ``--model`` in the measuring child, as ``bench`` runs it.

Before, the trace ran in the command's own process: a builder calling ``sys.exit(0)`` made
``predict --model`` print nothing and exit 0, one that slept hung it for ever, one that changed
directory moved the report the user asked for, one that printed corrupted ``--json``, and a
3 MB ``.keras`` whose config was 3 GB of spaces took 4.9 GB and 29 s before a MemoryError.
Each builder here is real, written to the test's folder, and traced by a real child.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuscout.measure.trace_child import MEMORY_ENV, TIMEOUT_ENV
from gpuscout.measure.user_spec import MAX_KERAS_JSON_BYTES
from gpuscout.store import Store
from tests.adversarial.test_builder_bound_rows import huge_config_keras
from tests.conftest import leftovers, run_cli, run_in_process

pytest.importorskip("tensorflow")

MODEL = """
def model():
    import keras

    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(3, activation="softmax")])
"""
BUILDERS = (
    MODEL
    + """
import os
import sys
import time


def exits():
    sys.exit(0)


def exits_hard():
    os._exit(0)


def sleeps():
    time.sleep(3600)
    return model()


def allocates():
    hold = bytearray(8 * 10**9)  # 8 GB, past the 2 GB the test allows the trace
    return model() if hold else None


def moves():
    os.makedirs("moved", exist_ok=True)
    os.chdir("moved")
    return model()


def prints():
    print("the builder talks")
    with open(os.environ["BUILT_LOG"], "a") as log:
        log.write("built\\n")
    return model()
"""
)
PREDICT = ("-b", "8", "--gpus", "h100", "--json")


@pytest.fixture
def builders(tmp_path: Path) -> Path:
    path = tmp_path / "builders.py"
    path.write_text(BUILDERS)
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscout: error: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("name", "backend"),
    [("exits", "tensorflow"), ("exits_hard", "tensorflow"), ("exits", "jax")],
)
def test_a_builder_that_exits_is_one_line_not_a_silent_success(
    builders: Path, name: str, backend: str
) -> None:
    if backend == "jax":
        pytest.importorskip("jax")
    spec = f"{builders}:{name}"
    r = run_cli("predict", "--model", spec, "--backend", backend, *PREDICT)
    assert r.code == 2 and r.out == "", (r.code, r.out, r.err)
    line = _one_line(r.err)
    assert f"--model {spec} ended the process with exit code 0 while its step was traced" in line
    assert "To fix: return the model from the builder instead of exiting." in line


def test_a_builder_that_never_returns_is_stopped_at_the_configured_limit(
    builders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the machine's speed the builder never returns, so the answer is the same; the
    limit is only how soon it comes."""
    monkeypatch.setenv(TIMEOUT_ENV, "2")
    r = run_cli("predict", "--model", f"{builders}:sleeps", *PREDICT, timeout=300)
    assert r.code == 2 and r.out == "", r.err
    line = _one_line(r.err)
    assert f"tracing its step said nothing for 2 s and was stopped ({TIMEOUT_ENV})" in line
    assert f"set {TIMEOUT_ENV}=SECONDS (now 2)" in line
    assert leftovers() == []


def test_a_builder_past_the_memory_limit_is_one_line(
    builders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MEMORY_ENV, "2")
    r = run_cli("predict", "--model", f"{builders}:allocates", *PREDICT)
    assert r.code == 2 and r.out == "", r.err
    line = _one_line(r.err)
    assert "needed more than 2.0 GB while its step was traced at batch 8" in line
    assert MEMORY_ENV in line


def test_a_builder_that_changes_directory_cannot_move_the_report(
    builders: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report --md r.md`` is written where the command started, not where the builder went."""
    from tests.report.runs import report_runs

    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save_many(report_runs())
    monkeypatch.chdir(tmp_path)
    r = run_cli("report", "--db", str(db), "--md", "r.md", "--model", f"{builders}:moves",
                "--samples", "100000", "--epochs", "1")  # fmt: skip
    assert r.code == 0, r.err
    assert (tmp_path / "r.md").is_file(), sorted(p.name for p in tmp_path.rglob("*.md"))
    assert not (tmp_path / "moved" / "r.md").exists()


def test_what_a_builder_prints_stays_off_the_json_and_the_trace_is_cached(
    builders: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its print goes to stderr; the second prediction reads the cached profile, so the
    builder ran once."""
    log = tmp_path / "built.log"
    monkeypatch.setenv("BUILT_LOG", str(log))
    args = ("predict", "--model", f"{builders}:prints", *PREDICT)
    first = run_cli(*args)
    assert first.code == 0, first.err
    assert "the builder talks" in first.err
    rows = json.loads(first.out)
    again = run_cli(*args, block_tf=True)
    assert again.code == 0, again.err
    assert json.loads(again.out) == rows
    assert log.read_text() == "built\n"


@pytest.mark.parametrize(
    ("name", "value"), [(TIMEOUT_ENV, "abc"), (TIMEOUT_ENV, "0"), (MEMORY_ENV, "-1")]
)
def test_an_unusable_limit_is_refused_not_ignored(
    builders: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    r = run_in_process("predict", "--model", f"{builders}:model", "-b", "7", "--gpus", "h100")
    assert r.code == 2, r.err
    assert f"{name}='{value}' is not a number of" in _one_line(r.err)


def test_a_keras_file_with_a_huge_config_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = huge_config_keras(tmp_path)
    assert path.stat().st_size < MAX_KERAS_JSON_BYTES // 100
    had_tf = "tensorflow" in sys.modules
    r = run_in_process("predict", "--model", str(path), *PREDICT)
    assert r.code == 2, r.err
    line = _one_line(r.err)
    assert f"--model '{path}': its config.json unpacks to 68 MB" in line, line
    if not had_tf:
        assert "tensorflow" not in sys.modules
