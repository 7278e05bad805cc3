"""The store on a real SQLite file: round trip, schema guard, killed and parallel writers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, Interval, RunResult
from gpuscout.store import Store, engines, schema
from tests.conftest import PATIENCE_S


def _result(i: int = 0) -> RunResult:
    return RunResult(
        created_at="2026-12-02T12:00:00+00:00",
        status="ok",
        workload="mlp",
        device="CPU:0",
        precision="fp32",
        xla=False,
        loop="custom",
        batch_size=32 + i,
        samples_per_second=Interval(median=1000.0 + i, ci_low=990.0, ci_high=1010.0),
        config=BenchConfig(),
        env={"tensorflow": "2.21.0"},
        step_times_s=[0.5, 0.01, 0.011, 0.0105],
    )


def test_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as store:
        saved = store.save(_result())
        assert saved.id == 1
        back = store.get(1)
    assert back == saved
    assert back.step_times_s == [0.5, 0.01, 0.011, 0.0105]
    assert back.to_json_dict()["schema_version"] == 1


def test_list_newest_first(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as store:
        for i in range(3):
            store.save(_result(i))
        rows = store.list()
        assert [r.id for r in rows] == [3, 2, 1]
        assert rows[0].samples_per_second == 1002.0
        assert [r.id for r in store.list(limit=1)] == [3]


def test_missing_run_is_a_user_error(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as store, pytest.raises(UserError, match="no run with id 7"):
        store.get(7)


def test_schema_version_recorded_and_newer_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    Store(path).close()
    con = sqlite3.connect(path)
    assert con.execute("select value from gpuscout_meta").fetchone() == (str(schema.LATEST),)
    con.execute("update gpuscout_meta set value = '99'")
    con.commit()
    con.close()
    with pytest.raises(UserError, match="schema v99, newer than this gpuscout"):
        Store(path)


def test_not_a_database_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(UserError, match="cannot open the database"):
        Store(path)
    assert path.read_text().startswith("these are my notes")  # nothing overwritten


WRITER = """
import sys
from gpuscout.store import Store
from tests.store.test_store import _result
store = Store(sys.argv[1])
i = 0
while True:
    store.save(_result(i))
    i += 1
    if i == 5:
        print("ready", flush=True)
    if i >= int(sys.argv[2]):
        break
"""


def _writer(db: Path | str, count: int) -> subprocess.Popen[str]:
    root = Path(__file__).parents[2]
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(count)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )


def test_survives_a_killed_writer(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    proc = _writer(db, 10**9)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=PATIENCE_S)
    proc.stdout.close()
    con = sqlite3.connect(db)
    assert con.execute("pragma integrity_check").fetchone() == ("ok",)
    con.close()
    with Store(db) as store:
        rows = store.list()
        assert len(rows) >= 5
        for row in rows:  # every stored run is whole
            assert store.get(row.id).id == row.id
        store.save(_result())  # and the database still takes writes


def test_a_v1_database_is_migrated_to_the_latest_without_losing_runs(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    path = tmp_path / "old.sqlite"
    before = _result().model_copy(update={"id": 1}).to_json_dict()  # as runs were before v4:
    before.pop("backend"), before["config"].pop("backend")  # no backend anywhere
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # a database as gpuscout with schema v1 left it
        schema._v1(conn)
        conn.execute(schema.meta.insert().values(key="schema_version", value="1"))
        conn.exec_driver_sql(
            "INSERT INTO runs (created_at, status, workload, device, precision, xla, loop, "
            "batch_size, samples_per_second, stop_reason, result_json, step_times_json) VALUES "
            f"('2026-01-01', 'ok', 'mlp', 'CPU:0', 'fp32', 0, 'custom', 32, 1000.0, 'budget', "
            f"'{json.dumps(before)}', '[0.5, 0.01]')"
        )
    engine.dispose()
    with Store(path) as store:
        old = store.get(1)
        assert old.workload == "mlp" and old.monitor_timeline == {}
        assert [r.mode for r in store.list()] == ["train"]  # v3: earlier runs were training
        assert [r.backend for r in store.list()] == ["tensorflow"]  # v4: and on TensorFlow
        assert old.backend == "tensorflow" and old.config.backend == "tensorflow"
        timeline = {"t": [0.1, 0.2], "cpu": [0.5, None]}
        new = store.save(_result().model_copy(update={"monitor_timeline": timeline}))
        assert store.get(new.id or 0).monitor_timeline == timeline
    con = sqlite3.connect(path)
    assert con.execute("select value from gpuscout_meta").fetchone() == (str(schema.LATEST),)


def test_a_write_the_database_refuses_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the write lock past the busy timeout: one line, not a traceback
    (and the run kept in a file in the current folder: see test_readonly.py)."""
    monkeypatch.setattr(engines, "BUSY_TIMEOUT_MS", 100)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(UserError, match=r"cannot write to the database .*: database is lo"):
                store.save(_result())
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert store.save(_result()).id == 1  # the lock gone, it writes again
