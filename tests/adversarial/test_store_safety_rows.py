"""The results store's safety (issue 31): an output that is the store, a damaged row, a bad
schema version, a symlink loop, another program's SQLite file or an empty one as ``--db``.

Every row's database is ``{tmp}/runs.sqlite`` (GPUSCOUT_DB); after each row a store that was
there still holds its runs, and a file that was not a store is byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuscout.store import Store
from tests.adversarial.table import Case, cases, run_case
from tests.adversarial.test_store_rows import _run


def _stored(tmp: Path) -> None:
    """The row's database with three runs."""
    with Store(tmp / "runs.sqlite", announce=False) as store:
        store.save_many([_run(i) for i in range(3)])


def _sql(statement: str) -> Callable[[Path], None]:
    """A store of three runs, then ``statement`` run on it (the damage)."""

    def setup(tmp: Path) -> None:
        _stored(tmp)
        with sqlite3.connect(tmp / "runs.sqlite") as c:
            c.execute(statement)
        c.close()

    return setup


def _foreign(tmp: Path) -> None:
    with sqlite3.connect(tmp / "runs.sqlite") as c:
        c.execute("CREATE TABLE notes (body TEXT)")
    c.close()


def _empty(tmp: Path) -> None:
    (tmp / "runs.sqlite").write_bytes(b"")


def _loop(tmp: Path) -> None:
    (tmp / "runs.sqlite").symlink_to(tmp / "runs.sqlite")


BAD_JSON = _sql("UPDATE runs SET result_json = '{}' WHERE id = 2")
BAD_VERSION = _sql("UPDATE gpuscout_meta SET value = 'v9' WHERE key = 'schema_version'")
DB = "{tmp}/runs.sqlite"

CASES = [
    # an output that is the store (or its companions) is refused before anything runs
    Case(("report", "--md", DB), 2, "would destroy every stored run", setup=_stored),
    Case(("report", "--html", DB), 2, "is the results database", setup=_stored),
    Case(("report", "--md", DB + "-wal"), 2, "results database's wal file", setup=_stored),
    Case(("runs", "export", "-o", DB), 2, "-o '", setup=_stored),
    Case(("runs", "export", "--output", DB + "-shm"), 2, "would destroy", setup=_stored),
    # one damaged row: named and skipped, or one line when asked for
    Case(("runs", "show", "2"), 2, "run 2 in", setup=BAD_JSON),
    Case(("runs", "show", "2", "--json"), 2, "gpuscout runs delete 2", setup=BAD_JSON),
    Case(("runs", "compare", "1", "2"), 2, "is unreadable", setup=BAD_JSON),
    Case(("runs", "export", "-o", "{tmp}/e.json"), 0, "", setup=BAD_JSON, one_line=False),
    Case(("runs", "list"), 0, "mlp", setup=BAD_JSON, one_line=False),
    # the store's metadata, read defensively
    Case(("runs", "list"), 2, "schema version gpuscout cannot read: 'v9'", setup=BAD_VERSION),
    Case(("runs", "delete", "1", "--yes"), 2, "cannot read: 'v9'", setup=BAD_VERSION),
    Case(("runs", "list", "--db", DB), 2, "symbolic link that loops", setup=_loop),
    Case(("runs", "show", "1"), 2, "symbolic link that loops", setup=_loop),
    # read commands never turn a file into a store
    Case(("runs", "list"), 2, "another program's SQLite database (tables: notes)", setup=_foreign),
    Case(("runs", "export"), 2, "another program's SQLite database", setup=_foreign),
    Case(("report", "--md", "{tmp}/r.md"), 2, "not a gpuscout results database", setup=_foreign),
    Case(("runs", "list"), 0, "no stored runs yet", setup=_empty),
    Case(("runs", "show", "1"), 2, "no run with id 1", setup=_empty),
    Case(("report", "--md", "{tmp}/r.md"), 2, "no stored runs to report on", setup=_empty),
]  # fmt: skip


def _digest(tmp: Path) -> str | None:
    path = tmp / "runs.sqlite"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.setup in (_foreign, _empty):
        case.setup(tmp_path)
        before = _digest(tmp_path)
        bare = Case(case.args, case.code, case.says, one_line=case.one_line)
        run_case(bare, tmp_path, monkeypatch)
        assert _digest(tmp_path) == before  # not one byte written
        return
    outcome = run_case(case, tmp_path, monkeypatch)
    if case.setup is BAD_JSON and case.code == 0 and case.args[1] == "export":
        assert "skipped run 2 in" in outcome.err and "runs delete 2" in outcome.err
    if case.setup is _stored and case.code == 2:
        with Store(tmp_path / "runs.sqlite", readonly=True) as store:
            assert store.count() == 3
