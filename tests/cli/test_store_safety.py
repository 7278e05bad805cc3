"""The results store is never destroyed, poisoned by one row, or written by a read (issue 31).

Real SQLite files, real commands (in this process, or a real ``bench`` child for the store
removed mid-measurement); every refusal is one line with exit 2 and the store is unchanged.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import textwrap
from pathlib import Path

import pytest

from gpuscout.store import Store
from gpuscout.store.exchange import read_runs
from tests.adversarial.test_store_rows import _run
from tests.conftest import CliResult, run_cli, run_in_process


def _one_line(r: CliResult) -> str:
    assert r.code == 2 and "Traceback" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    return lines[0]


def _store(path: Path, n: int = 3) -> Path:
    with Store(path, announce=False) as store:
        store.save_many([_run(i) for i in range(n)])
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("report", "--md", "{db}"), "--md"),
        (("report", "--html", "{db}"), "--html"),
        (("report", "--md", "{db}-wal"), "--md"),
        (("runs", "export", "-o", "{db}"), "-o"),
        (("runs", "export", "-o", "{link}"), "-o"),
        (("runs", "export", "-o", "{hard}"), "-o"),
        (("runs", "export", "-o", "{rel}"), "-o"),
    ],
)
def test_an_output_that_is_the_store_is_refused(
    args: tuple[str, ...], flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GPUSCOUT_DB=o.db report --md o.db once wrote the report over every stored run."""
    db = _store(tmp_path / "o.db")
    (tmp_path / "link.md").symlink_to(db)
    os.link(db, tmp_path / "hard.md")
    monkeypatch.chdir(tmp_path / "..")
    monkeypatch.setenv("GPUSCOUT_DB", str(db))
    names = {"db": str(db), "link": str(tmp_path / "link.md"), "hard": str(tmp_path / "hard.md")}
    names["rel"] = f"{tmp_path.name}/../{tmp_path.name}/o.db"
    before = _digest(db)
    line = _one_line(run_in_process(*(a.format(**names) for a in args)))
    assert f"{flag} '" in line and "would destroy every stored run" in line
    assert _digest(db) == before
    with Store(db, readonly=True) as store:
        assert store.count() == 3


def test_write_whole_never_replaces_a_sqlite_file(tmp_path: Path) -> None:
    """The last guard: another --db than the one checked, and still no report over a store."""
    other = _store(tmp_path / "other.sqlite", 1)
    line = _one_line(run_in_process("runs", "export", "-o", str(other), "--db", str(other)))
    assert "would destroy" in line
    plain = _store(tmp_path / "plain.sqlite", 1)
    before = _digest(plain)
    db = _store(tmp_path / "runs.sqlite", 1)
    line = _one_line(run_in_process("runs", "export", "-o", str(plain), "--db", str(db)))
    assert "is a SQLite database" in line and _digest(plain) == before


def _corrupt(db: Path, run_id: int, value: str) -> None:
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET result_json = ? WHERE id = ?", (value, run_id))
    c.close()


@pytest.mark.parametrize("bad", ["{}", "{not json", "[1, 2]"])
def test_one_bad_row_is_named_and_skipped(bad: str, tmp_path: Path) -> None:
    db = _store(tmp_path / "runs.sqlite")
    _corrupt(db, 2, bad)
    line = _one_line(run_in_process("runs", "show", "2", "--db", str(db)))
    assert "run 2 in" in line and "is unreadable" in line and "gpuscout runs delete 2" in line
    r = run_in_process("runs", "export", "--db", str(db), "-o", str(tmp_path / "e.json"))
    assert r.code == 0 and "skipped run 2" in r.err and "runs delete 2" in r.err, r.err
    kept = [r.samples_per_second for r in read_runs(tmp_path / "e.json")]
    assert [k.median for k in kept if k] == [1000.0, 1002.0]  # runs 1 and 3
    r = run_in_process("report", "--md", str(tmp_path / "r.md"), "--db", str(db))
    assert r.code == 0 and "skipped run 2" in r.err and "Traceback" not in r.err, r.err
    r = run_in_process("runs", "list", "--db", str(db))
    assert r.code == 0 and r.out.count("mlp") == 3
    assert run_in_process("runs", "show", "1", "--json", "--db", str(db)).code == 0


@pytest.mark.parametrize("version", ["x9", "", "-1", "1e3"])
def test_a_bad_schema_version_is_one_line(version: str, tmp_path: Path) -> None:
    db = _store(tmp_path / "runs.sqlite")
    with sqlite3.connect(db) as c:
        c.execute("UPDATE gpuscout_meta SET value = ? WHERE key = 'schema_version'", (version,))
    c.close()
    for args in (("runs", "list"), ("runs", "delete", "1", "--yes")):
        line = _one_line(run_in_process(*args, "--db", str(db)))
        assert "has a schema version gpuscout cannot read" in line and repr(version) in line


def test_a_symlink_loop_as_db_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    for args in (("runs", "list"), ("runs", "show", "1"), ("report", "--md", "r.md")):
        assert "symbolic link that loops" in _one_line(run_in_process(*args, "--db", str(loop)))


def _foreign(path: Path) -> Path:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE recipes (name TEXT, grams REAL)")
        c.execute("INSERT INTO recipes VALUES ('bread', 500)")
    c.close()
    return path


READS = [
    ("runs", "list"),
    ("runs", "list", "--json"),
    ("runs", "show", "1"),
    ("runs", "export"),
    ("runs", "compare", "1", "2"),
    ("report", "--md", "{tmp}/r.md"),
    ("predict", "--workload", "mlp", "--gpu", "a100-80gb"),
    ("predict", "--workload", "mlp", "--gpu", "a100-80gb", "--from-run", "1"),
    ("cost", "--workload", "mlp", "--epochs", "1", "--samples", "1000", "--from-run", "1"),
    ("advise", "--workload", "mlp", "--epochs", "1", "--samples", "1000"),
    ("calibrate",),
]


@pytest.mark.parametrize("kind", ["empty", "foreign"])
def test_read_commands_never_write_a_file_that_is_not_a_store(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "x.sqlite"
    db.write_bytes(b"") if kind == "empty" else _foreign(db)
    monkeypatch.setenv("GPUSCOUT_DB", str(db))
    before = _digest(db)
    for args in READS:
        r = run_in_process(*(a.replace("{tmp}", str(tmp_path)) for a in args))
        assert "Traceback" not in r.err, (args, r.err)
        if kind == "foreign":
            assert r.code == 2 and "another program's SQLite database" in r.err, (args, r.err)
        assert _digest(db) == before, args
        assert sorted(p.name for p in tmp_path.iterdir() if p.name != "r.md") == ["x.sqlite"]
    r = run_in_process("runs", "list")
    if kind == "empty":  # a file with no tables reads as a store with no runs
        assert r.code == 0 and "no stored runs yet" in r.out, r.err


def test_import_into_a_foreign_database_needs_yes(tmp_path: Path) -> None:
    db = _foreign(tmp_path / "theirs.sqlite")
    export = tmp_path / "e.json"
    _store(tmp_path / "mine.sqlite", 2)
    mine = str(tmp_path / "mine.sqlite")
    assert run_in_process("runs", "export", "-o", str(export), "--db", mine).code == 0
    before = _digest(db)
    line = _one_line(run_in_process("runs", "import", str(export), "--db", str(db)))
    assert "tables: recipes" in line and "(gpuscout_meta, runs)" in line and "--yes" in line
    assert _digest(db) == before
    r = run_in_process("runs", "import", str(export), "--db", str(db), "--yes")
    assert r.code == 0 and "imported 2 run(s)" in r.out, r.err
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT name FROM recipes").fetchall() == [("bread",)]
    c.close()


BUILDER = """
import os
from pathlib import Path

import keras


def build():
    Path(os.environ["DOOMED_DB"]).unlink()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model
"""


def test_a_store_removed_while_measuring_keeps_the_run_in_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The builder deletes the store: bench once said "ok" and stored into an unlinked file."""
    db = _store(tmp_path / "doomed.sqlite", 1)
    (tmp_path / "deleter.py").write_text(textwrap.dedent(BUILDER))
    monkeypatch.setenv("DOOMED_DB", str(db))
    monkeypatch.chdir(tmp_path)
    model = f"{tmp_path / 'deleter.py'}:build"
    r = run_cli("bench", "--model", model, "--steps", "5", "--warmup-steps", "1", "-b", "8",
                "-q", "--db", str(db))  # fmt: skip
    (kept,) = tmp_path.glob("gpuscout-unsaved-run-*.json")
    line = _one_line(r)
    assert "was removed or replaced while the run was measured" in line
    assert f"the run was kept in {kept}" in line and f"gpuscout runs import {kept}" in line
    (run,) = read_runs(kept)
    assert run.status == "ok" and len(run.step_times_s) == 6
    assert not db.exists()
