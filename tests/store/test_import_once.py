"""An import stores each run once, by its content hash (schema v5): the same file imported
twice, a file holding a run twice, a store's own export imported back into it, and a store
from before v5, whose runs get their hashes when it is migrated (a damaged run is kept as it
is, with none)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sqlalchemy import create_engine

from gpuscout.store import Store, schema
from gpuscout.store.content_hash import content_hash
from gpuscout.store.exchange import export_json
from tests.conftest import run_in_process
from tests.store.test_store import _result


def _import(path: Path, db: Path | str) -> str:
    r = run_in_process("runs", "import", str(path), "--db", str(db))
    assert r.code == 0, r.err
    return r.out


def test_the_same_file_imported_twice_stores_each_run_once(tmp_path: Path) -> None:
    """Two alike runs in one file (bench stores every measurement, alike or not) stay two;
    the file imported again stores nothing (review of issue 43: the second alike run was
    dropped, and lost in the move between stores)."""
    export = tmp_path / "e.json"
    export.write_text(export_json([_result(0), _result(1), _result(0)]))  # two alike runs
    db = tmp_path / "mine.sqlite"
    assert "imported 3 run(s)" in _import(export, db)
    assert "its 3 run(s) are already stored" in _import(export, db)
    with Store(db, readonly=True) as store:
        assert sorted(r.batch_size for r in store.list()) == [32, 32, 33]
    # a third alike run in a later file is a new one: the store held two of it, this is a third
    more = tmp_path / "more.json"
    more.write_text(export_json([_result(0), _result(0), _result(0)]))
    out = _import(more, db)
    assert "imported 1 run(s)" in out and "2 already stored, skipped" in out


def test_a_time_imported_with_its_offset_before_hashes_as_it_does_now(tmp_path: Path) -> None:
    """A run stored with '+05:00' (imported before times were normalised) and the same run
    imported now (stored in UTC) are one run: the hash reads the time in UTC."""
    shifted = _result(0).model_copy(update={"created_at": "2026-12-02T17:00:00+05:00"})
    assert content_hash(shifted) == content_hash(_result(0))  # 12:00 UTC, the same moment


def test_a_stores_own_export_imported_back_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite"
    with Store(db) as store:  # measured runs, saved as bench saves them
        store.save(_result(0))
        store.save(_result(1))
    export = tmp_path / "e.json"
    assert run_in_process("runs", "export", "--db", str(db), "-o", str(export)).code == 0
    assert "its 2 run(s) are already stored" in _import(export, db)
    # a run that differs in anything stored (here its note) is another run
    changed = json.loads(export.read_text())
    changed["runs"][0]["note"] = "again"
    export.write_text(json.dumps(changed))
    assert "imported 1 run(s)" in _import(export, db)


def test_a_v4_store_gets_hashes_when_migrated_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "v4.sqlite"
    engine = create_engine(f"sqlite:///{path}")
    good = _result(0).model_copy(update={"id": 1})
    with engine.begin() as conn:  # a database as gpuscout with schema v4 left it
        for _, step in schema.MIGRATIONS[:4]:
            step(conn)
        conn.execute(schema.meta.insert().values(key="schema_version", value="4"))
        for i, result_json in ((1, json.dumps(good.to_json_dict())), (2, "{damaged")):
            conn.exec_driver_sql(
                "INSERT INTO runs (id, created_at, status, workload, device, precision, xla, "
                "loop, batch_size, samples_per_second, stop_reason, result_json, "
                "step_times_json, monitor_json) VALUES (?, '2026-12-02', 'ok', 'mlp', 'CPU:0', "
                "'fp32', 0, 'custom', 32, 1000.0, NULL, ?, ?, '{}')",
                (i, result_json, json.dumps(good.step_times_s)),
            )
    engine.dispose()
    before = sqlite3.connect(path).execute("select id, result_json from runs").fetchall()
    export = tmp_path / "e.json"
    export.write_text(export_json([_result(0)]))
    assert "its 1 run(s) are already stored" in _import(export, path)  # migrated, then matched
    con = sqlite3.connect(path)
    assert con.execute("select id, result_json from runs").fetchall() == before  # untouched
    hashes = dict(con.execute("select id, content_hash from runs").fetchall())
    assert hashes == {1: content_hash(_result(0)), 2: None}  # the damaged run: kept, no hash
    assert con.execute("select value from gpuscout_meta").fetchone() == (str(schema.LATEST),)


def test_bench_saves_every_run_even_when_two_are_alike(tmp_path: Path) -> None:
    """Only an import skips stored runs: a measurement is stored as made."""
    with Store(tmp_path / "b.sqlite") as store:
        store.save_many([_result(0), _result(0)])
        assert store.count() == 2


def test_a_postgresql_store_also_stores_an_imported_run_once(tmp_path: Path, pg_url: str) -> None:
    """The team store: the same file imported twice (two members collecting one plan)."""
    export = tmp_path / "e.json"
    export.write_text(export_json([_result(0), _result(1)]))
    assert "imported 2 run(s)" in _import(export, pg_url)
    assert "its 2 run(s) are already stored" in _import(export, pg_url)
    with Store(pg_url, readonly=True) as store:
        assert store.count() == 2


def test_a_field_at_its_default_is_hashed_as_absent_and_away_from_it_as_content() -> None:
    """A field at its default reads as absent (so a field a later gpuscout adds leaves every
    older run's hash as it was); away from its default it is content: the same run compiled
    (issue 44's ``compile``) is another run."""
    run = _result(0)
    compiled = run.model_copy(update={"config": run.config.model_copy(update={"compile": True})})
    assert content_hash(compiled) != content_hash(run)
    hashed = json.loads(export_json([run]))["runs"][0]
    assert hashed["config"]["compile"] is False  # exported in full: only the hash omits it
    noted = run.model_copy(update={"note": "x"})
    assert content_hash(noted) != content_hash(run)


def test_a_v5_store_gets_its_hashes_again_when_migrated(tmp_path: Path) -> None:
    """v6 recomputes every stored hash: a v5 store's runs, hashed with every field, match
    the file they came from once migrated."""
    path = tmp_path / "v5.sqlite"
    with Store(path) as store:
        store.save(_result(0))
    con = sqlite3.connect(path)
    with con:  # as v5 left it: another hash, and version 5
        con.execute("update runs set content_hash = ?", ("0" * 64,))
        con.execute("update gpuscout_meta set value = '5' where key = 'schema_version'")
    con.close()
    export = tmp_path / "e.json"
    export.write_text(export_json([_result(0)]))
    assert "its 1 run(s) are already stored" in _import(export, path)
    con = sqlite3.connect(path)
    assert con.execute("select content_hash from runs").fetchall() == [(content_hash(_result(0)),)]
