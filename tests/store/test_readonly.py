"""A store that refuses writes, a typo'd --db, ``runs delete``, and a store of many runs.

Read-only files and folders are real (chmod), and the commands that must meet them run in a
fresh process held to file modes. Root ignores file modes, so under root that process runs
without the capabilities that let it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER): it is
then held to the modes as any user is. One such process runs a test's commands one after
another (each an interpreter start saved); commands that need no held process run in this one.
"""

from __future__ import annotations

import ctypes
import json
import os
import pty
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuscout.core.errors import UserError
from gpuscout.store import Store, engines
from gpuscout.store import db as db_module
from gpuscout.store.exchange import export_json, read_runs
from tests.conftest import BLOCK_TF, CliResult, assert_user_errors, run_in_process
from tests.store.test_store import _result

PR_CAPBSET_DROP = 24
DAC_CAPS = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def _drop_file_mode_override() -> None:
    """In the child, before exec: give up root's licence to ignore file modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in DAC_CAPS:
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _held_to_modes() -> Callable[[], None] | None:
    """The preexec_fn that makes a child respect file modes; skips when none can."""
    if os.geteuid() != 0:
        return None
    probe = subprocess.run(
        [sys.executable, "-c", "pass"], preexec_fn=_drop_file_mode_override, check=False
    )
    if probe.returncode != 0:  # pragma: no cover - a container without CAP_SETPCAP
        pytest.skip("running as root, and root's file-mode override cannot be dropped here")
    return _drop_file_mode_override


# Runs each argv of a JSON list through gpuscout.cli.main, as run_in_process does, and prints
# [exit code, stdout, stderr] of each as JSON. An exception main lets out ends the process with
# its traceback, as it would end the command.
_EACH = """
import contextlib, io, json, sys
from gpuscout.cli import main
said = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    said.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(said))
"""


def cli_held_to_modes(*commands: tuple[str, ...]) -> list[CliResult]:
    """Each ``gpuscout ARGS`` of ``commands`` as an ordinary user would run it, one after
    another in one fresh process held to file modes (TensorFlow blocked: a refusal before
    measuring never needs it, and a measurement would fail without it)."""
    blocker = Path(tempfile.mkdtemp(prefix="block-tf-"))
    (blocker / "sitecustomize.py").write_text(BLOCK_TF)
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(blocker)}
    proc = subprocess.run(
        [sys.executable, "-c", _EACH, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=_held_to_modes(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return [CliResult(code, out, err) for code, out, err in json.loads(proc.stdout)]


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A database file of mode 444 (one run), and a read-only folder holding a writable
    database (one run) and room for none."""
    ro_file = tmp_path / "ro.sqlite"
    folder = tmp_path / "locked"
    folder.mkdir()
    in_folder = folder / "in.sqlite"
    for path in (ro_file, in_folder):
        with Store(path, announce=False) as store:
            store.save(_result(0))
    ro_file.chmod(0o444)
    folder.chmod(0o555)
    yield {"file": ro_file, "folder": folder, "in_folder": in_folder}
    folder.chmod(0o755)
    ro_file.chmod(0o644)


def _one_line(r: CliResult) -> str:
    assert r.code == 2, (r.code, r.err)
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    return r.err


def test_a_read_only_store_is_refused_before_measuring(
    read_only: dict[str, Path], tmp_path: Path
) -> None:
    bench = ("bench", "--workload", "mlp", "--seconds", "600", "--quiet")
    ro_file, folder = read_only["file"], read_only["folder"]
    before = ro_file.read_bytes()
    export = tmp_path / "one.json"
    export.write_text(export_json([_result(3)]))
    said = [
        _one_line(r)
        for r in cli_held_to_modes(
            (*bench, "--db", str(ro_file)),
            (*bench, "--db", str(folder / "new.sqlite")),
            (*bench, "--db", str(read_only["in_folder"])),
            ("runs", "import", str(export), "--db", str(ro_file)),
            ("runs", "delete", "1", "--yes", "--db", str(ro_file)),
        )
    ]
    assert f"the database '{ro_file}' is read-only. To fix: make it writable" in said[0]
    assert f"cannot create the database '{folder / 'new.sqlite'}': its folder is not" in said[1]
    assert not (folder / "new.sqlite").exists()
    assert "is in a read-only folder, where SQLite cannot write its -wal and -shm" in said[2]
    assert "is read-only" in said[3]
    assert "is read-only" in said[4]
    assert ro_file.read_bytes() == before


def test_a_read_only_store_can_still_be_read(read_only: dict[str, Path]) -> None:
    dbs = (read_only["file"], read_only["in_folder"])
    said = cli_held_to_modes(
        *(c for db in dbs for c in (("runs", "list", "--json", "--db", str(db)),
                                    ("runs", "show", "1", "--json", "--db", str(db))))
    )  # fmt: skip
    for listed, shown in zip(said[::2], said[1::2], strict=True):
        assert listed.code == 0, listed.err
        assert [row["id"] for row in json.loads(listed.out)] == [1]
        assert shown.code == 0 and json.loads(shown.out)["batch_size"] == 32, shown.err
    assert sorted(p.name for p in read_only["folder"].iterdir()) == ["in.sqlite"]


def test_the_write_probe_is_a_real_write(tmp_path: Path) -> None:
    """SQLite opens a read-only file and even begins a write transaction on it; the probe
    must write. Under a process held to file modes, the file check is bypassed to prove it."""
    db = tmp_path / "probe.sqlite"
    Store(db, announce=False).close()
    db.chmod(0o444)
    code = (
        "import sys\nfrom gpuscout.store import db as m, engines\n"
        "from gpuscout.core.errors import UserError\n"
        "engines.writable = lambda path: True\n"
        "try:\n    m.Store(sys.argv[1])\nexcept UserError as e:\n    print(e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(db)],
        capture_output=True,
        text=True,
        preexec_fn=_held_to_modes(),
        check=False,
    )
    assert "cannot write to the database" in proc.stdout, proc.stdout + proc.stderr
    assert "readonly database" in proc.stdout
    db.chmod(0o644)


def test_a_finished_run_the_store_refuses_is_kept_as_an_import_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database is locked by another writer past the busy timeout when the run ends:
    the run goes to a file the error names, and that file imports."""
    monkeypatch.setattr(engines, "BUSY_TIMEOUT_MS", 100)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "busy.sqlite"
    store = Store(db, announce=False)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(UserError) as caught:
            store.save(_result(7))
    finally:
        other.execute("ROLLBACK")
        other.close()
    message = caught.value.one_line()
    assert "cannot write to the database" in message and "database is locked" in message
    kept = sorted(tmp_path.glob("gpuscout-unsaved-run-*.json"))
    assert len(kept) == 1 and f"the run was kept in {kept[0]}" in message
    assert f"then gpuscout runs import {kept[0]}" in message
    (back,) = read_runs(kept[0])
    assert back.batch_size == _result(7).batch_size and back.step_times_s == _result(7).step_times_s
    saved = store.save_many([back])
    store.close()
    assert saved[0].id == 1


def test_the_kept_file_goes_where_it_can(tmp_path: Path) -> None:
    """Not the current folder when it is read-only: the database's folder, else the temp one."""
    cwd, db_dir = tmp_path / "cwd", tmp_path / "db"
    cwd.mkdir(mode=0o555)
    db_dir.mkdir()
    code = (
        "import sys\nfrom gpuscout.store.unsaved import unsaved_file\n"
        "from tests.store.test_store import _result\n"
        "print(unsaved_file(_result(1), sys.argv[1]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(db_dir / "runs.sqlite")],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        preexec_fn=_held_to_modes(),
        check=False,
    )
    cwd.chmod(0o755)
    kept = Path(proc.stdout.strip())
    assert kept.parent == db_dir, proc.stdout + proc.stderr
    assert read_runs(kept)[0].batch_size == 33
    assert list(cwd.iterdir()) == []


def test_read_commands_never_create_a_database(tmp_path: Path) -> None:
    """In this process: each refusal without TensorFlow (assert_user_errors)."""
    typo = tmp_path / "rnus.sqlite"
    md = str(tmp_path / "r.md")
    for args in (("runs", "list"), ("runs", "show", "1"), ("report", "--md", md)):
        assert_user_errors([((*args, "--db", str(typo)), f"no results database at '{typo}'")])
        assert "check --db and GPUSCOUT_DB" in run_in_process(*args, "--db", str(typo)).err
    r = run_in_process("predict", "--workload", "mlp", "--db", str(typo))
    assert r.code == 0, r.err  # predict only consults stored runs
    assert not typo.exists()
    export = tmp_path / "one.json"
    export.write_text(export_json([_result(0)]))
    r = run_in_process("runs", "import", str(export), "--db", str(typo))
    assert r.code == 0 and "imported 1 run(s)" in r.out and "as id 1" in r.out, r.err
    assert f"gpuscout: new results database at {typo} (none existed there)" in r.err


def _many(db: Path, n: int) -> None:
    with Store(db, announce=False) as store:
        store.save_many([_result(i % 10) for i in range(n)])


def test_runs_list_pages_newest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process (``runs`` without TensorFlow: tests/cli/test_cli.py, blocked)."""
    monkeypatch.setenv("COLUMNS", "200")
    db = tmp_path / "many.sqlite"
    _many(db, 60)
    r = run_in_process("runs", "list", "--db", str(db))
    assert r.code == 0, r.err
    assert "showing the newest 50 of 60 runs; --limit 0 for all" in r.err
    assert " 60 " in r.out and " 11 " in r.out and " 10 " not in r.out
    r = run_in_process("runs", "list", "--limit", "0", "--db", str(db))
    assert r.code == 0 and r.err == "" and " 1 " in r.out
    listed = run_in_process("runs", "list", "--json", "--db", str(db)).json()
    assert len(listed) == 60 and listed[0]["id"] == 60  # scripts get everything
    listed = run_in_process("runs", "list", "--json", "--limit", "5", "--db", str(db))
    assert [row["id"] for row in listed.json()] == [60, 59, 58, 57, 56]


def test_an_import_is_stored_whole_or_not_at_all_across_batches(tmp_path: Path) -> None:
    """A bad run after more than a batch of good ones: the good ones already inserted are
    rolled back with it."""
    db = tmp_path / "target.sqlite"
    _many(db, 1)
    n = db_module.IMPORT_BATCH + 20
    # distinct runs (an import stores the same content once): each with its own note
    runs = [_result(i % 10).model_copy(update={"note": f"run {i}"}) for i in range(n)]
    body = json.loads(export_json(runs))
    body["runs"][-1]["samples_per_second"]["ci_low"] = 5000.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(body))
    r = run_in_process("runs", "import", str(bad), "--db", str(db))
    assert r.code == 2 and f"run {n} (index {n - 1}): field 'samples_per_second'" in r.err
    with Store(db, readonly=True) as store:
        assert store.count() == 1
    body["runs"][-1]["samples_per_second"]["ci_low"] = 900.0
    bad.write_text(json.dumps(body))
    r = run_in_process("runs", "import", str(bad), "--db", str(db))
    assert r.code == 0 and f"imported {n:,} run(s) from {bad} as ids 2-{n + 1}" in r.out
    with Store(db, readonly=True) as store:
        assert store.count() == n + 1
        assert store.get(n + 1).id == n + 1  # the id inside the stored JSON too


def _on_terminal(args: list[str], answer: bytes) -> tuple[int, str]:
    """Run ``gpuscout ARGS`` with a real terminal (a pty) as stdin and stdout; type answer."""
    master, slave = pty.openpty()
    code = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "COLUMNS": "200"},
    )
    os.close(slave)
    os.write(master, answer)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=120), seen.decode(errors="replace")


def test_runs_delete_asks_on_a_terminal(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    _many(db, 3)
    code, seen = _on_terminal(["runs", "delete", "2,3", "--db", str(db)], b"n\n")
    assert code == 1 and "delete these 2 run(s) from" in seen and "nothing deleted" in seen
    with Store(db, readonly=True) as store:
        assert store.count() == 3
    code, seen = _on_terminal(["runs", "delete", "2,3", "--db", str(db)], b"y\n")
    assert code == 0 and "deleted 2 run(s): 2, 3" in seen, seen
    with Store(db, readonly=True) as store:
        assert [r.id for r in store.list()] == [1]
    assert stat.S_IMODE(db.stat().st_mode) & 0o200  # (still an ordinary, writable file)


def test_bench_keeps_a_run_the_store_refuses_after_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database took the write probe but refuses the run when it ends (a trigger planted
    in the real file aborts every insert, as a full disk would): the measured run is kept as
    an import file in the current folder, named in the one-line error, and imports. The
    command runs in this process, its measuring child a real one."""
    db = tmp_path / "full.sqlite"
    Store(db, announce=False).close()
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON runs "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    conn.commit()
    conn.close()
    monkeypatch.chdir(tmp_path)
    args = ("bench", "--workload", "mlp", "--steps", "5", "--warmup-steps", "1", "-b", "8", "-q")
    proc = run_in_process(*args, "--db", str(db), stderr_file=True)
    (kept,) = tmp_path.glob("gpuscout-unsaved-run-*.json")
    assert proc.code == 2 and "Traceback" not in proc.err, proc.err
    assert len(proc.err.strip().splitlines()) == 1, proc.err
    assert f"database or disk is full; the run was kept in {kept}" in proc.err
    assert f"then gpuscout runs import {kept}" in proc.err
    (run,) = read_runs(kept)
    assert run.status == "ok" and run.workload == "mlp" and len(run.step_times_s) == 6
    with sqlite3.connect(db) as c:
        c.execute("DROP TRIGGER refuse")
    r = run_in_process("runs", "import", str(kept), "--db", str(db))
    assert r.code == 0 and "imported 1 run(s)" in r.out, r.err
