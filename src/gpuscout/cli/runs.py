"""``gpuscout runs list|show|export|import|compare``: the stored runs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpuscout.cli.parser import positive_int
from gpuscout.errors import UserError


def register(sub: Any) -> None:
    p = sub.add_parser("runs", help="list, show, export, import and compare stored runs")
    runs_sub = p.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    ls = runs_sub.add_parser("list", help="the stored runs, newest first")
    ls.add_argument("--limit", type=positive_int, help="at most this many runs")
    show = runs_sub.add_parser("show", help="one run in full")
    show.add_argument("id", type=positive_int)
    show.add_argument("--steps", action="store_true", help="with --json: include every step time")
    export = runs_sub.add_parser("export", help="write stored runs to a JSON or CSV file")
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    export.add_argument("--ids", type=parse_ids, help="only these runs, e.g. 3,4,7 (default: all)")
    imp = runs_sub.add_parser("import", help="add the runs of an exported JSON file")
    imp.add_argument("file", help="a file written by 'gpuscout runs export'")
    cmp = runs_sub.add_parser("compare", help="two runs side by side, if they are comparable")
    cmp.add_argument("a", type=positive_int)
    cmp.add_argument("b", type=positive_int)
    for q in (ls, show, export, imp, cmp):
        q.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    for q in (ls, show, imp, cmp):
        q.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(handler=run_list)
    show.set_defaults(handler=run_show)
    export.set_defaults(handler=run_export)
    imp.set_defaults(handler=run_import)
    cmp.set_defaults(handler=run_compare)


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(i) for i in text.split(",") if i.strip()]
    except ValueError:
        ids = []
    if not ids or min(ids) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of run ids such as 3,4,7")
    return ids


def run_list(args: argparse.Namespace) -> int:
    from gpuscout.store import Store

    with Store(args.db) as store:
        rows = store.list(args.limit)
    if args.json:
        json.dump([vars(r) for r in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.terminal import runs_table

    stdout_console().print(runs_table(rows) if rows else "no stored runs yet: run 'gpuscout bench'")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from gpuscout.store import Store

    with Store(args.db) as store:
        result = store.get(args.id)
    if args.json:
        data = result.to_json_dict()
        if args.steps:
            data["step_times_s"] = result.step_times_s
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.terminal import print_result

    print_result(result, stdout_console())
    return 0


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpuscout.store import Store
    from gpuscout.store.exchange import export_csv, export_json

    with Store(args.db) as store:
        ids = args.ids or sorted(row.id for row in store.list())
        runs = [store.get(i) for i in ids]
    text = export_json(runs) if args.format == "json" else export_csv(runs)
    if not args.output:
        sys.stdout.write(text)
        return 0
    from gpuscout.report.files import write_whole

    out = Path(args.output)
    write_whole(out, text, "-o")  # whole or not at all: an old export is never half-replaced
    print(f"exported {len(runs)} run(s) to {out}", file=sys.stderr)
    return 0


def run_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpuscout.store import Store
    from gpuscout.store.exchange import read_runs

    if not args.file.strip():  # Path("") would be the current directory
        raise UserError(
            "no file to import: the name is empty.",
            "pass a JSON file written by 'gpuscout runs export'.",
        )
    runs = read_runs(Path(args.file))  # all validated before the database is touched
    with Store(args.db) as store:
        saved = store.save_many(runs)
    if args.json:
        json.dump([r.id for r in saved], sys.stdout)
        sys.stdout.write("\n")
    else:
        ids = ", ".join(str(r.id) for r in saved)
        print(f"imported {len(saved)} run(s) from {args.file} as {ids or 'nothing'}")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from gpuscout.comparison import compare
    from gpuscout.store import Store

    with Store(args.db) as store:
        result = compare(store.get(args.a), store.get(args.b))
    if args.json:
        from dataclasses import asdict

        data = {
            "a": args.a,
            "b": args.b,
            "comparable": result.comparable,
            "differences": [asdict(d) for d in result.differences],
            "speedup": result.speedup.model_dump() if result.speedup else None,
        }
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from gpuscout.report.compare_table import print_comparison
    from gpuscout.report.console import stdout_console

    print_comparison(result, stdout_console())
    return 0
