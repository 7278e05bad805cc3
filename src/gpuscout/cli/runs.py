"""``gpuscout runs list|show``: the stored runs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpuscout.cli.parser import positive_int


def register(sub: Any) -> None:
    p = sub.add_parser("runs", help="list and show stored runs")
    runs_sub = p.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    ls = runs_sub.add_parser("list", help="the stored runs, newest first")
    ls.add_argument("--limit", type=positive_int, help="at most this many runs")
    show = runs_sub.add_parser("show", help="one run in full")
    show.add_argument("id", type=positive_int)
    show.add_argument("--steps", action="store_true", help="with --json: include every step time")
    for q in (ls, show):
        q.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
        q.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(handler=run_list)
    show.set_defaults(handler=run_show)


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
