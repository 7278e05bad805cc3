"""CSV on a terminal escapes control characters, CSV through a pipe stays byte-exact (issue 31).

A stored run's note and a user catalog's GPU name are the user's text: on a terminal an ESC in
them would set the window title (OSC 0) and clear the screen (``ESC[2J``). Real processes: one
under a pseudo-terminal (``pty``), one through a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from gpuscout.catalog.catalog import data_dir

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"
GPUSCOUT = [sys.executable, "-m", "gpuscout"]


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "GPUSCOUT_DB": str(tmp / "runs.sqlite"), "COLUMNS": "200"}


def _on_a_terminal(args: list[str], env: dict[str, str]) -> bytes:
    """What ``args`` writes to stdout when stdout is a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return b"".join(chunks)


def _store_hostile_run(tmp: Path) -> None:
    from gpuscout.store import Store
    from tests.report.runs import report_runs

    with Store(str(tmp / "runs.sqlite")) as store:
        store.save_many([report_runs()[0].model_copy(update={"note": f"before {HOSTILE} after"})])


def _hostile_catalog(tmp: Path) -> Path:
    lines = (data_dir() / "gpus.csv").read_text().splitlines()
    header, row = lines[0], lines[1]
    cells = row.split(",", 3)  # id, name, aliases, the rest
    path = tmp / "mine.csv"
    path.write_text(f"{header}\nmy-3090,Mine {HOSTILE} 3090,,{cells[3]}\n")
    return path


def test_runs_export_csv_escapes_on_a_terminal_and_not_through_a_pipe(tmp_path: Path) -> None:
    _store_hostile_run(tmp_path)
    args = [*GPUSCOUT, "runs", "export", "--format", "csv"]
    shown = _on_a_terminal(args, _env(tmp_path))
    assert b"\x1b" not in shown and b"\x07" not in shown
    assert b"before \\x1b]0;pwned\\x07\\x1b[2J after" in shown
    piped = subprocess.run(args, capture_output=True, env=_env(tmp_path), timeout=120)
    assert piped.returncode == 0, piped.stderr.decode()
    assert f"before {HOSTILE} after".encode() in piped.stdout  # data, byte for byte


def test_specs_csv_escapes_a_user_catalog_name_on_a_terminal(tmp_path: Path) -> None:
    args = [*GPUSCOUT, "specs", "my-3090", "--csv", "--catalog", str(_hostile_catalog(tmp_path))]
    shown = _on_a_terminal(args, _env(tmp_path))
    assert b"\x1b" not in shown and b"Mine \\x1b]0;pwned\\x07\\x1b[2J 3090" in shown
    piped = subprocess.run(args, capture_output=True, env=_env(tmp_path), timeout=120)
    assert piped.returncode == 0, piped.stderr.decode()
    assert f"Mine {HOSTILE} 3090".encode() in piped.stdout


def test_runs_export_json_escapes_by_json_rules_everywhere(tmp_path: Path) -> None:
    """JSON needs no terminal check: its own escapes (``\\u001b``) keep the bytes out."""
    _store_hostile_run(tmp_path)
    args = [*GPUSCOUT, "runs", "export"]
    piped = subprocess.run(args, capture_output=True, env=_env(tmp_path), timeout=120)
    assert piped.returncode == 0, piped.stderr.decode()
    assert b"\x1b" not in piped.stdout and b"\\u001b]0;pwned\\u0007" in piped.stdout
