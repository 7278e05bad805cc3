"""Shared fixtures: an isolated results DB and CPU-peak cache, and a CLI runner (subprocess)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Makes importing TensorFlow or Keras fail: put first into ``python -c``, or (for a process and
# every child it starts) into a ``sitecustomize.py`` on PYTHONPATH.
BLOCK_TF = (
    "import sys\n"
    "class _Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('tensorflow', 'keras', 'jax', 'jaxlib', 'torch'):\n"
    "            raise ImportError('blocked by the test: ' + name)\n"
    "sys.meta_path.insert(0, _Block())\n"
)


TEST_TAG = "GPUSCOUT_TEST_TAG"
# How long a test waits for something the OS schedules (a killed process reaped, a process
# group ended, a thread joined) before calling it a hang. Idle, each takes milliseconds; beside
# a heavy job it took over 5 s once (issue 43: a guard given 5 s to reap a worker failed). The
# wait ends at the event, so a long limit costs nothing when things work.
PATIENCE_S = 120.0


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One CPU-peak cache for the whole run, so each peak's matmul calibration (about 5 CPU-s
    for each framework and precision) runs once, not once per pytest-xdist worker: the workers
    share it as one user's commands share their cache (the product replaces the file whole and
    only ever raises a peak; a key both workers meet at once is measured by both, as before).
    Under xdist, the base temp folder's parent is the run's own, shared by its workers
    (pytest-xdist's documented way to share session state)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    path = root / "xdg-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cache_dir: Path) -> None:
    monkeypatch.setenv("GPUSCOUT_DB", str(tmp_path / "runs.sqlite"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_dir))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    # Every process a test starts inherits this, so leftovers() finds this test's processes
    # only, not those of a test running beside it (pytest -n).
    monkeypatch.setenv(TEST_TAG, uuid.uuid4().hex)


def leftovers() -> list[str]:
    """This test's gpuscout processes still alive: measuring children and launched workers."""
    import psutil

    time.sleep(0.5)  # a child killed with its parent needs a moment to be reaped
    tag, found = os.environ[TEST_TAG], []
    for proc in psutil.process_iter(["cmdline", "status"]):
        line = " ".join(proc.info["cmdline"] or [])
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if "gpuscout.measure.child" not in line and "gpuscout-launch-" not in line:
            continue
        try:
            mine = proc.environ().get(TEST_TAG) == tag
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if mine:
            found.append(line)
    return found


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, block_tf: bool = False, timeout: float = 300) -> CliResult:
    """Run ``gpuscout ARGS`` in a fresh interpreter, as a user would.

    ``block_tf``: TensorFlow, Keras and JAX cannot be imported by this process nor by any child
    it starts.
    """
    env = {**os.environ, "COLUMNS": "200"}
    if block_tf:
        blocker = Path(tempfile.mkdtemp(prefix="block-tf-"))
        (blocker / "sitecustomize.py").write_text(BLOCK_TF)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))
    code = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_in_process(*args: str, stderr_file: bool = False) -> CliResult:
    """Run ``gpuscout ARGS`` through :func:`gpuscout.cli.main` in this process: for refusals,
    hundreds of which would each cost an interpreter start as subprocesses. stdin is empty.

    ``stderr_file``: stderr is a real temporary file, not a string buffer, for commands that
    start a measuring child (the runner hands it the command's own stderr file, as a terminal
    or a log would be); the child stays a real process, what a test of the measurement checks.
    """
    from gpuscout.cli import main

    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        err: Any = (
            stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
            if stderr_file
            else io.StringIO()
        )
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            stack.enter_context(_stdin_from(io.StringIO("")))
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's own exits
                code = exit_.code if isinstance(exit_.code, int) else 1
            err.flush()
        err.seek(0)
        said = err.read()
    return CliResult(code, out.getvalue(), said)


@contextlib.contextmanager
def _stdin_from(stream: Any) -> Any:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def assert_user_errors(cases: list[tuple[tuple[str, ...], str]]) -> None:
    """Each command fails as bad input should: exit 2, one line naming the problem, no
    traceback, and without importing TensorFlow (checked where this test process has not
    imported it yet; tests/test_public_api.py imports every non-measuring module with it
    blocked). In-process: a refusal needs no fresh interpreter."""
    had_tf = "tensorflow" in sys.modules
    for args, message in cases:
        r = run_in_process(*args)
        assert r.code == 2, (args, r.err)
        assert message in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1, r.err
        assert "Traceback" not in r.err
        assert had_tf or "tensorflow" not in sys.modules, (args, "imported TensorFlow")


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    from tests.postgres import server

    with server() as found:
        yield found


@pytest.fixture
def pg_url(postgres_server: tuple[str | None, str]) -> str:
    """A new, empty PostgreSQL database on a real server (skips, saying why, without one)."""
    from tests.postgres import fresh_database

    url, why = postgres_server
    if url is None:
        pytest.skip(why)
    return fresh_database(url)
