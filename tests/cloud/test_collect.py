"""``cloud collect`` is idempotent: collected twice, or again after an interruption, each run
is stored once (its content hash); and it reads only regular files, never through a link."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuscout.store.exchange import export_json
from tests.conftest import run_in_process
from tests.store.test_store import _result


def _plan_folder(tmp_path: Path, files: int = 3, per_file: int = 2) -> Path:
    """A plan's folder with ``files`` exported files of ``per_file`` distinct runs each."""
    results = tmp_path / "plan" / "results"
    results.mkdir(parents=True)
    for f in range(files):
        runs = [_result(r).model_copy(update={"note": f"candidate {f}"}) for r in range(per_file)]
        (results / f"gpuscout-c{f}-1x1.json").write_text(export_json(runs))
    return tmp_path / "plan"


def _stored(db: Path) -> list[tuple[str | None, int]]:
    listed = run_in_process("runs", "list", "--db", str(db), "--json")
    assert listed.code == 0, listed.err
    shown = [run_in_process("runs", "show", str(r["id"]), "--db", str(db), "--json")
             for r in json.loads(listed.out)]  # fmt: skip
    return sorted((json.loads(s.out)["note"], json.loads(s.out)["batch_size"]) for s in shown)


def test_collect_twice_stores_every_run_once(tmp_path: Path) -> None:
    plan, db = _plan_folder(tmp_path), tmp_path / "mine.sqlite"
    first = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert first.code == 0 and "collected 6 new run(s)" in first.out, first.err
    again = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert again.code == 0, again.err
    assert "collected 0 new run(s) (6 more were already stored)" in again.out
    assert "2 run(s) from candidate gpuscout-c0-1x1: 0 new, 2 already stored" in again.out
    assert len(_stored(db)) == 6


def test_collect_after_an_interruption_stores_only_what_was_missing(tmp_path: Path) -> None:
    """An interrupted collect leaves the files it finished stored (each file is one
    transaction): here the first one. Collected again, the rest come in, none twice."""
    plan, db = _plan_folder(tmp_path), tmp_path / "mine.sqlite"
    done = plan / "results" / "gpuscout-c0-1x1.json"
    assert run_in_process("runs", "import", str(done), "--db", str(db)).code == 0
    r = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert r.code == 0 and "collected 4 new run(s) (2 more were already stored)" in r.out, r.err
    assert _stored(db) == sorted((f"candidate {f}", 32 + r) for f in range(3) for r in range(2))


def test_a_file_fetched_by_hand_beside_the_fetched_one_adds_nothing(tmp_path: Path) -> None:
    plan, db = _plan_folder(tmp_path, files=1), tmp_path / "mine.sqlite"
    fetched = plan / "results" / "gpuscout-c0-1x1.json"
    (plan / "by-hand.json").write_text(fetched.read_text())  # the same runs twice
    r = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert r.code == 0 and "collected 2 new run(s) (2 more were already stored)" in r.out, r.err


def test_collect_refuses_links_and_folders_before_storing_any(tmp_path: Path) -> None:
    plan, db = _plan_folder(tmp_path, files=1), tmp_path / "mine.sqlite"
    outside = tmp_path / "elsewhere.json"
    outside.write_text(export_json([_result(5)]))
    link = plan / "results" / "z.json"
    os.symlink(outside, link)
    r = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert r.code == 2 and f"'{link}' is not a regular file" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and not db.exists()
    link.unlink()
    (plan / "results" / "d.json").mkdir()
    r = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert r.code == 2 and "d.json' is not a regular file" in r.err, r.err
    (plan / "results" / "d.json").rmdir()
    (plan / "results").rename(tmp_path / "real")
    os.symlink(tmp_path / "real", plan / "results")  # the results folder itself a link
    r = run_in_process("cloud", "collect", str(plan), "--db", str(db))
    assert r.code == 2 and "results' is a link" in r.err, r.err
