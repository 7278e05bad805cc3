"""What the environment hands a command (issue 43's held-back categories of reliability v3):
a '~' in a path given through an environment variable, standard output on a full device, and
an imported run's time with an offset. Each is a real process or a real store."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.store import Store
from gpuscout.store.exchange import export_json
from tests.conftest import run_in_process
from tests.store.test_store import _result

CLI = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def test_a_tilde_in_gpuscout_db_is_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with Store(home / "runs.sqlite") as store:
        store.save_many([_result(0)])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUSCOUT_DB", "~/runs.sqlite")  # as a quoted export leaves it
    out = run_in_process("runs", "list", "--json")
    assert out.code == 0, out.err
    assert [r["id"] for r in json.loads(out.out)] == [1]
    assert not (tmp_path / "~").exists()  # not a folder named '~' in the working directory


def test_a_tilde_in_gpuscout_catalog_is_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    row = {"gpu_id": "rtx-4090", "provider": "my-shop", "kind": "purchase_used",
           "usd_per_gpu": "1100", "source": "a quote", "retrieved_on": "2026-11-30"}  # fmt: skip
    with (home / "prices.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(row))
        writer.writeheader()
        writer.writerow(row)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUSCOUT_CATALOG", "~/prices.csv")
    prices = [p.usd_per_gpu for p in load_catalog().prices_for("rtx-4090")]
    assert 1100 in prices


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", [("specs",), ("specs", "--json"), ("runs", "list", "--json")])
def test_standard_output_on_a_full_device_is_one_line_not_a_traceback(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    with Store(tmp_path / "runs.sqlite") as store:
        store.save_many([_result(0)])
    env = {**os.environ, "GPUSCOUT_DB": str(tmp_path / "runs.sqlite")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", CLI, *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "could not write standard output: No space left on device" in proc.stderr


def test_an_imported_time_with_an_offset_is_stored_in_utc(tmp_path: Path) -> None:
    with Store(tmp_path / "a.sqlite") as store:
        runs = store.save_many([_result(0), _result(1)])
    body = json.loads(export_json(runs))
    body["runs"][0]["created_at"] = "2026-12-07T10:00:00+05:00"  # 05:00 UTC
    body["runs"][1]["created_at"] = "2026-12-07T06:00:00"  # no offset: UTC, as written
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(body))
    db = tmp_path / "b.sqlite"
    out = run_in_process("runs", "import", str(path), "--db", str(db))
    assert out.code == 0, out.err
    with Store(db) as store:
        stored = sorted(r.created_at for r in store.load([1, 2]))
    assert stored == ["2026-12-07T05:00:00+00:00", "2026-12-07T06:00:00+00:00"]


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_character_the_output_cannot_encode_is_shown_escaped(
    encoding: str, tmp_path: Path
) -> None:
    with Store(tmp_path / "runs.sqlite") as store:
        store.save_many([_result(0).model_copy(update={"device": "gpu:0 ☃", "note": "🚀"})])
    env = {**os.environ, "GPUSCOUT_DB": str(tmp_path / "runs.sqlite"),
           "PYTHONIOENCODING": encoding, "COLUMNS": "200"}  # fmt: skip
    for args in (("runs", "list"), ("runs", "export", "--format", "csv")):
        proc = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True,
                              env=env, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert b"Traceback" not in proc.stderr
        assert b"gpu:0 \\u2603" in proc.stdout


def test_an_imported_run_without_its_step_times_is_shown_saying_so(tmp_path: Path) -> None:
    """A file someone made may leave out what gpuscout's own runs always carry (the warm-up,
    the step-time percentiles): ``runs show`` says so instead of ending in an AssertionError."""
    with Store(tmp_path / "a.sqlite") as store:
        runs = store.save_many([_result(0)])
    body = json.loads(export_json(runs))
    for field in ("warmup", "step_time_s", "stop_reason", "mean_samples_per_second"):
        body["runs"][0][field] = None
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(body))
    db = str(tmp_path / "b.sqlite")
    assert run_in_process("runs", "import", str(path), "--db", db).code == 0
    out = run_in_process("runs", "show", "1", "--db", db)
    assert out.code == 0, out.err
    assert out.out.count("not recorded") >= 3 and "stopped: None" not in out.out
