"""``gpuscout launch --workers N -- bench ...``: a multi-worker run on this machine."""

from __future__ import annotations

import argparse
from typing import Any

from gpuscout.cli.bench import add_note_arg
from gpuscout.cli.parser import WORKERS
from gpuscout.core.errors import UserError
from gpuscout.core.limits import (
    MAX_WORKERS,
    WORKER_BYTES,
    WORKERS_PER_CORE,
    check_workers,
    usable_cores,
)

# bench options the launcher sets for each worker, or owns itself
OWNED = (
    "--workers", "--task-index", "--cluster", "--port-base", "--devices", "--scaling", "--db",
    "--json", "--quiet", "-q", "--note",
)  # fmt: skip


def register(sub: Any) -> None:
    p = sub.add_parser(
        "launch",
        help="run a benchmark as N workers on this machine (MultiWorkerMirroredStrategy)",
        description="Start N local workers of 'gpuscout bench' on free loopback ports, as N "
        "machines would run 'gpuscout bench --workers ... --task-index i', and store one "
        "combined run. More workers than this machine can take (about "
        f"{WORKER_BYTES / 1e9:g} GB of memory each, at most {WORKERS_PER_CORE} per CPU core) "
        "are refused before any starts, unless --force. "
        "Example: gpuscout launch --workers 2 -- bench --workload mlp --steps 50",
    )
    p.add_argument(
        "--workers",
        type=WORKERS,
        required=True,
        help=f"how many workers (at most {MAX_WORKERS}; more than this machine can take are "
        "refused, see --force)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help=f"start them even when they exceed this machine: more than {WORKERS_PER_CORE} per "
        f"CPU core, or {WORKER_BYTES / 1e9:g} GB each beyond the memory available",
    )
    p.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("-q", "--quiet", action="store_true", help="one line per run")
    add_note_arg(p)
    # not "command": that is the top-level parser's name for the subcommand, which an empty
    # list here overwrote (so 'launch --workers 2' printed the general help and exited 0)
    p.add_argument(
        "bench_command",
        metavar="command",
        nargs=argparse.REMAINDER,
        help="-- bench [bench options]",
    )
    p.set_defaults(handler=run)


def bench_arguments(command: list[str]) -> list[str]:
    """The bench options after ``-- bench``; UserError for anything else."""
    rest = command[1:] if command[:1] == ["--"] else command
    if not rest:
        raise UserError(
            "launch needs the benchmark to run after '--', and none was given.",
            "add it, e.g.: gpuscout launch --workers 2 -- bench --workload mlp --steps 50",
        )
    if rest[:1] != ["bench"]:
        raise UserError(
            f"launch runs 'bench', got '{' '.join(rest) or 'nothing'}'.",
            "write it as: gpuscout launch --workers 2 -- bench --workload mlp --steps 50",
        )
    args = rest[1:]
    owned = [a for a in args if a.split("=")[0] in OWNED]
    if owned:
        raise UserError(
            f"'{owned[0]}' after 'bench': launch sets it for each worker.",
            "drop it (put --db, --json, --quiet or --note before '--').",
        )
    return args


def run(args: argparse.Namespace) -> int:
    import psutil
    from rich.console import Console

    from gpuscout.cli import bench as bench_cmd
    from gpuscout.cli import build_parser
    from gpuscout.measure.benchmark import check
    from gpuscout.scale.launch import launch
    from gpuscout.store import Store

    bench_args = bench_arguments(args.bench_command)
    parsed = build_parser().parse_args(["bench", *bench_args])
    config = bench_cmd.config_from_args(parsed)
    check(config)  # bad bench options fail here, before any worker starts
    # nor may the workers take more than this machine has (unless --force)
    check_workers(args.workers, psutil.virtual_memory().available, usable_cores(), args.force)
    store = Store(args.db)
    err = Console(stderr=True)

    def say(text: str) -> None:
        if not args.quiet and not args.json:
            err.print(f"launch: {text}", highlight=False)

    result = store.save(bench_cmd.noted(launch(config, bench_args, args.workers, say), args.note))
    store.close()
    return bench_cmd.show(result, args)


__all__ = ["register", "run"]
