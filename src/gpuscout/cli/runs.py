"""``gpuscout runs list|show|export|import|compare|delete``: the stored runs."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from gpuscout.cli.output import print_json, write_text
from gpuscout.cli.parser import RUN_ID, RUN_IDS
from gpuscout.core.errors import UserError
from gpuscout.core.ranges import int_in

# Rows ``runs list`` shows unless told: a team store holds thousands, and a table of thousands
# is neither read nor quick (rendering 10,000 rows took 9 s). --json lists all by default.
LIST_DEFAULT = 50
LIST_LIMIT = int_in(0, 10**9)  # rows to list; 0: every run


def register(sub: Any) -> None:
    p = sub.add_parser(
        "runs",
        help="list, show, export, import, compare and delete stored runs",
        description="Every bench, soak, scout and launch run is stored (failed and interrupted "
        "ones too) in one database: a SQLite file by default, or a PostgreSQL server a team "
        "shares (--db URL or GPUSCOUT_DB). These actions read and manage it.",
    )
    runs_sub = p.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    ls = runs_sub.add_parser(
        "list",
        help="the stored runs, newest first",
        description="One line per stored run, newest first: id, date, status, workload, device, "
        "precision, batch and speed. Use an id with 'runs show', 'runs compare' or 'runs delete'.",
    )
    ls.add_argument(
        "--limit",
        type=LIST_LIMIT,
        help=f"the newest this many runs; 0 for all (default: {LIST_DEFAULT}, all with --json)",
    )
    show = runs_sub.add_parser(
        "show",
        help="one run in full",
        description="One stored run in full: its speed with the 95% interval, warm-up, "
        "memory, environment, warnings and assumptions, as bench printed it.",
    )
    show.add_argument("id", type=RUN_ID, help="the run's id, as 'gpuscout runs list' shows it")
    show.add_argument("--steps", action="store_true", help="with --json: include every step time")
    export = runs_sub.add_parser(
        "export",
        help="write stored runs to a JSON or CSV file",
        description="Write stored runs to a file: JSON keeps every field and every step time "
        "and is what 'runs import' reads (another machine's store, a colleague's); CSV is one "
        "row per run (the headline figures, SI units) for a spreadsheet.",
    )
    export.add_argument(
        "--format",
        choices=("json", "csv"),
        default="json",
        help="json: every field, for 'runs import' (default); csv: one row per run, the "
        "summary columns",
    )
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    export.add_argument("--ids", type=parse_ids, help="only these runs, e.g. 3,4,7 (default: all)")
    imp = runs_sub.add_parser(
        "import",
        help="add the runs of an exported JSON file",
        description="Add the runs of a JSON file written by 'runs export' (or kept as a file "
        "when the database refused a run) as new runs with new ids; all of the file or none.",
    )
    imp.add_argument("file", help="a file written by 'gpuscout runs export'")
    imp.add_argument(
        "--yes",
        action="store_true",
        help="import into another program's SQLite database, adding gpuscout's tables to it",
    )
    cmp = runs_sub.add_parser(
        "compare",
        help="two runs side by side, if they are comparable",
        description="Two runs side by side: every setting that differs (workload, precision, "
        "batch, backend, software), and B's speed over A's with its 95% interval where the "
        "two are comparable.",
    )
    cmp.add_argument("a", type=RUN_ID, help="the first run's id, the baseline")
    cmp.add_argument("b", type=RUN_ID, help="the second run's id, whose speed is set over A's")
    rm = runs_sub.add_parser(
        "delete",
        help="delete stored runs (asks first, unless --yes)",
        description="Delete stored runs, e.g. a run measured on a busy machine. Every id must "
        "exist, and all go in one transaction or none does. Asks first, unless --yes.",
    )
    rm.add_argument("ids", type=RUN_IDS, metavar="IDS", help="the runs to delete, e.g. 3,4,7")
    rm.add_argument("--yes", action="store_true", help="delete without asking (for scripts)")
    for q in (ls, show, export, imp, cmp, rm):
        q.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    for q in (ls, show, imp, cmp):
        q.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(handler=run_list)
    show.set_defaults(handler=run_show)
    export.set_defaults(handler=run_export)
    imp.set_defaults(handler=run_import)
    cmp.set_defaults(handler=run_compare)
    rm.set_defaults(handler=run_delete)


parse_ids = RUN_IDS  # '3,4,7' -> [3, 4, 7]: run ids, each within what SQLite can hold


def run_list(args: argparse.Namespace) -> int:
    from gpuscout.store import Store, database_exists, default_target

    limit = args.limit if args.limit is not None else (0 if args.json else LIST_DEFAULT)
    if args.db is None and not os.environ.get("GPUSCOUT_DB") and not database_exists():
        # A fresh install, not a typo: nothing stored yet is the truth, and where it will be.
        if args.json:
            print_json([])
        else:
            print(f"no stored runs yet (they will go in {default_target()}): run 'gpuscout bench'")
        return 0
    with Store(args.db, readonly=True) as store:
        rows = store.list(limit or None)  # the listed columns only, never a run's JSON
        total = store.count() if limit and len(rows) == limit else len(rows)
    if args.json:
        print_json([vars(r) for r in rows])
    else:
        from gpuscout.report.console import stdout_console
        from gpuscout.report.terminal import runs_table

        stdout_console().print(
            runs_table(rows) if rows else "no stored runs yet: run 'gpuscout bench'"
        )
    if len(rows) < total:
        print(
            f"gpuscout: showing the newest {len(rows):,} of {total:,} runs; --limit 0 for all",
            file=sys.stderr,
        )
    return 0


def run_show(args: argparse.Namespace) -> int:
    from gpuscout.store import Store

    with Store(args.db, readonly=True) as store:
        result = store.get(args.id)
    if args.json:
        data = result.to_json_dict()
        if args.steps:
            data["step_times_s"] = result.step_times_s
        print_json(data)
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.terminal import print_result

    print_result(result, stdout_console())
    return 0


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpuscout.cli.paths import check_output_files
    from gpuscout.store import Store
    from gpuscout.store.exchange import export_csv, export_json

    if args.output:  # before reading: never the results database itself
        check_output_files([(Path(args.output), "-o")], args.db)
    with Store(args.db, readonly=True) as store:
        ids = args.ids or sorted(row.id for row in store.list())
        runs = store.load(ids)  # a run that does not parse is named and skipped
    text = export_json(runs) if args.format == "json" else export_csv(runs)
    if not args.output:
        write_text(text)  # escaped on a terminal, byte-exact to a pipe
        return 0
    from gpuscout.report.files import write_whole

    out = Path(args.output)
    write_whole(out, text, "-o")  # whole or not at all: an old export is never half-replaced
    print(f"exported {len(runs)} run(s) to {out}", file=sys.stderr)
    return 0


def run_import(args: argparse.Namespace) -> int:
    from gpuscout.store.import_file import import_file

    got = import_file(args.file, args.db, adopt=args.yes, keep_ids=args.json)
    if args.json:
        print_json(got.ids, indent=None)
        return 0
    already = f"; {got.skipped:,} already stored, skipped" if got.skipped else ""
    if got.count:
        which = f"id {got.low}" if got.count == 1 else f"ids {got.low:,}-{got.high:,}"
        print(f"imported {got.count:,} run(s) from {args.file} as {which}{already}")
    elif got.skipped:
        print(f"imported nothing from {args.file}: its {got.skipped:,} run(s) are already stored")
    else:
        print(f"imported nothing from {args.file}: it holds no runs")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from gpuscout.core.comparison import compare
    from gpuscout.store import Store

    with Store(args.db, readonly=True) as store:
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
        print_json(data)
        return 0
    from gpuscout.report.compare_table import print_comparison
    from gpuscout.report.console import stdout_console

    print_comparison(result, stdout_console())
    return 0


def run_delete(args: argparse.Namespace) -> int:
    """Delete runs, after a yes on the terminal (or ``--yes``): how a store that took a bad
    run is repaired. Every id must exist, and all go in one transaction, or none does."""
    from gpuscout.store import Store

    ids: list[int] = args.ids
    if not args.yes and not sys.stdin.isatty():
        raise UserError(
            f"'runs delete' asks before deleting {len(ids):,} run(s), and there is no terminal "
            "to ask on.",
            "add --yes to delete without asking.",
        )
    with Store(args.db, create=False) as store:
        rows = store.rows(ids)  # an unknown id is an error, and nothing is deleted
        if not args.yes:
            from gpuscout.report.console import stdout_console
            from gpuscout.report.terminal import runs_table

            stdout_console().print(runs_table(rows[:20]))
            more = " (the first 20 shown)" if len(rows) > 20 else ""
            try:
                answer = input(
                    f"delete these {len(rows):,} run(s){more} from {store.where}? [y/N] "
                )
            except EOFError:
                answer = ""
            if not answer.strip().lower().startswith("y"):
                print("gpuscout: nothing deleted", file=sys.stderr)
                return 1
        deleted = store.delete(ids)
    shown = ", ".join(str(i) for i in ids[:20]) + (" ..." if len(ids) > 20 else "")
    print(f"deleted {deleted:,} run(s): {shown}")
    return 0
