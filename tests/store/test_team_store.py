"""The team store on a real PostgreSQL server, and what both back ends must do alike.

The server is a real one (``tests/postgres.py`` starts a throwaway cluster from the machine's
PostgreSQL, or uses GPUSCOUT_TEST_POSTGRES); these tests skip, saying why, where there is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from gpuscout.core.errors import UserError
from gpuscout.store import Store, schema
from tests.conftest import run_cli
from tests.store.test_store import _result, _writer


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "team.sqlite")
    return str(request.getfixturevalue("pg_url"))


def test_round_trip_and_schema(target: str) -> None:
    long_device = "8 x " + ",".join(f"GPU:{i}" for i in range(40))  # over VARCHAR(64)
    with Store(target) as store:
        saved = store.save(_result().model_copy(update={"device": long_device, "note": "ü ✓"}))
        back = store.get(saved.id or 0)
        assert back == saved and back.step_times_s == [0.5, 0.01, 0.011, 0.0105]
        assert [r.device for r in store.list()] == [long_device]
        engine = store.engine
        with engine.connect() as conn:
            assert schema.current_version(conn) == schema.LATEST
        assert {c["name"] for c in inspect(engine).get_columns("runs")} == {
            c.name for c in schema.runs.c
        }


def test_concurrent_writers_lose_nothing(target: str) -> None:
    """Three processes open the same new database at once (so all three try to migrate it) and
    write 40 runs each: 120 runs, ids 1-120, none lost or doubled."""
    procs = [_writer(target, 40) for _ in range(3)]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    with Store(target) as store:
        rows = store.list()
        assert sorted(r.id for r in rows) == list(range(1, 121))
        assert sorted(r.batch_size for r in rows) == sorted([32 + i for i in range(40)] * 3)


def test_export_then_import_across_back_ends(tmp_path: Path, pg_url: str) -> None:
    """A team member's SQLite runs exported and imported into the shared PostgreSQL store."""
    local = tmp_path / "mine.sqlite"
    with Store(local) as store:
        store.save_many([_result(i) for i in range(3)])
    out = tmp_path / "runs.json"
    assert run_cli("runs", "export", "--db", str(local), "-o", str(out), block_tf=True).code == 0
    imported = run_cli("runs", "import", str(out), "--db", pg_url, block_tf=True)
    assert imported.code == 0, imported.err
    listed = run_cli("runs", "list", "--json", "--db", pg_url, block_tf=True).json()
    assert [r["batch_size"] for r in listed] == [34, 33, 32]


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    from tests.postgres import _free_port

    url = f"postgresql://someone:secret@127.0.0.1:{_free_port()}/team"
    res = run_cli("runs", "list", "--db", url, block_tf=True)
    assert res.code == 2
    assert len(res.err.strip().splitlines()) == 1
    assert "cannot open the database 'postgresql+psycopg://someone:***@127.0.0.1" in res.err
    assert "secret" not in res.err  # the password is never printed


def test_other_database_urls_are_refused() -> None:
    with pytest.raises(UserError, match=r"'mysql://\.\.\.' is not a database gpuscout can use"):
        Store("mysql://root@localhost/runs")


def test_postgres_migrates_a_v1_database(pg_url: str) -> None:
    engine = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:  # a database as gpuscout with schema v1 left it
        schema._v1(conn)
        conn.execute(schema.meta.insert().values(key="schema_version", value="1"))
    engine.dispose()
    with Store(pg_url) as store:
        saved = store.save(_result().model_copy(update={"monitor_timeline": {"t": [0.1]}}))
        assert store.get(saved.id or 0).monitor_timeline == {"t": [0.1]}
