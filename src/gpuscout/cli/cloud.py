"""``gpuscout cloud plan|run|collect|estimator``: measure a rented GPU before renting it."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.cli.job_args import add_job_size, add_job_source, add_stack_option
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import comma_items
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core.errors import UserError
from gpuscout.core.ranges import float_in, int_in
from gpuscout.workloads import WORKLOADS

if TYPE_CHECKING:
    from gpuscout.cloud.plan import Bench, Candidate

GPUS_PER_NODE = int_in(1, 16)
NODES = int_in(1, 64)
MAX_USD = float_in(0.0, 1e9)
# Options of the bench a task runs that the task itself sets on each node.


def register(sub: Any) -> None:
    p = sub.add_parser(
        "cloud",
        help="measure candidate cloud GPUs through SkyPilot before renting one",
        description="Measure a job on rented GPUs before renting one for weeks: 'plan' writes "
        "a SkyPilot task per candidate GPU with its predicted time, cost and hard caps; 'run' "
        "launches them (needs pip install 'gpuscout[cloud]'); 'collect' imports the runs they "
        "exported; 'estimator' shows the job time gpuscout hands SkyPilot's optimizer.",
    )
    cloud = p.add_subparsers(dest="cloud_command", metavar="ACTION", required=True)
    plan = cloud.add_parser(
        "plan",
        help="write one SkyPilot task per candidate GPU, with time, cost and caps",
        description="Write one SkyPilot task YAML per candidate GPU that runs 'gpuscout bench' "
        "there and exports the run; print each one's predicted time and cost (the catalog's "
        "cheapest on-demand price); refuse a plan whose most it can bill exceeds --max-usd.",
        epilog="e.g. gpuscout cloud plan --gpus h100-sxm,l40s,rtx-4090 --max-usd 10 -- bench "
        "--model my.py:build --seconds 120",
    )
    plan.add_argument("--gpus", action="append", required=True, metavar="GPU,...",
                      help="catalog GPUs to measure, comma list, e.g. h100-sxm,l40s")  # fmt: skip
    plan.add_argument("--gpus-per-node", type=GPUS_PER_NODE, default=1,
                      help="GPUs in each machine (default 1); bench gets --devices N")  # fmt: skip
    plan.add_argument(
        "--nodes", type=NODES, default=1,
        help="machines (default 1); more than one runs bench --cluster skypilot",
    )  # fmt: skip
    plan.add_argument(
        "--max-usd", type=MAX_USD, metavar="USD",
        help="refuse the plan if a candidate could cost more (at its caps)",
    )  # fmt: skip
    plan.add_argument("--out", type=Path, default=Path("gpuscout-cloud"), metavar="DIR",
                      help="folder for the task files (default ./gpuscout-cloud)")  # fmt: skip
    add_catalog_arg(plan)
    plan.add_argument("bench", nargs=argparse.REMAINDER, metavar="-- bench ...",
                      help="the gpuscout bench to run on each candidate, after --")  # fmt: skip
    run = cloud.add_parser(
        "run",
        help="launch a plan's tasks through SkyPilot and fetch their runs",
        description="Launch each task of a plan through SkyPilot's Python API (torn down "
        "after its job, autodown as a safety net), wait for it, and fetch its exported runs "
        "into DIR/results. Not yet run against a cloud by gpuscout's tests.",
    )
    run.add_argument("dir", type=Path, help="the folder 'cloud plan' wrote")
    run.add_argument("--dry-run", action="store_true", help="print what would be launched")
    collect = cloud.add_parser(
        "collect",
        help="import the runs a plan's tasks exported into your store",
        description="Import every exported run file of a plan's folder (DIR/results/*.json, "
        "or *.json in DIR) as 'runs import' does, each file whole or not at all.",
    )
    collect.add_argument("dir", type=Path, help="the folder 'cloud plan' wrote")
    collect.add_argument(
        "--db", help="results database (default: GPUSCOUT_DB or the user data dir)"
    )
    est = cloud.add_parser(
        "estimator",
        help="the job time per SkyPilot accelerator that SkyPilot's optimizer would get",
        description="The seconds gpuscout.cloud.time_estimator returns for each SkyPilot "
        "accelerator name it knows: what Task.set_time_estimator hands SkyPilot's optimizer.",
        epilog="e.g. gpuscout cloud estimator --workload resnet50 --epochs 10 --samples 1281167",
    )
    job = est.add_argument_group("the job: one of --workload, --model, --from-run with its size")
    add_job_source(job, "a built-in workload: " + ", ".join(WORKLOADS))
    add_stack_option(job)
    add_job_size(job)
    est.add_argument("--count", type=GPUS_PER_NODE, default=1, help="GPUs per node (default 1)")
    est.add_argument("--nodes", type=NODES, default=1, help="the task's num_nodes (default 1)")
    est.add_argument("--db", help="results database (default: GPUSCOUT_DB or the user data dir)")
    est.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(est)
    plan.set_defaults(handler=run_plan)
    run.set_defaults(handler=run_run)
    collect.set_defaults(handler=run_collect)
    est.set_defaults(handler=run_estimator)


def run_plan(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from gpuscout.catalog import load_catalog
    from gpuscout.cli.cloud_bench import bench_of
    from gpuscout.cloud.names import overheads, sky_name
    from gpuscout.cloud.plain_names import plain_name
    from gpuscout.cloud.plan import checkout, plan_candidate, task, yaml_text
    from gpuscout.predict.scaling import max_per_machine
    from gpuscout.report.files import write_whole

    bench = bench_of(list(args.bench))
    given = any(a.partition("=")[0] == "--devices" for a in bench.args)
    if args.nodes > 1 and given and "{gpus_per_node}" not in bench.args:
        raise UserError(
            f"--nodes {args.nodes} and bench --devices contradict each other: over several "
            "nodes each node's worker trains on every GPU it has.",
            "drop bench --devices (or plan --nodes 1).",
        )
    if bench.counts and max(bench.counts) > args.gpus_per_node:
        over = [c for c in bench.counts if c > args.gpus_per_node]
        raise UserError(
            f"bench --scaling {','.join(map(str, bench.counts))}: "
            f"{','.join(map(str, over))} GPU(s), more than the {args.gpus_per_node} of "
            f"--gpus-per-node {args.gpus_per_node}: each count is measured in one machine.",
            f"plan --gpus-per-node {max(bench.counts)}, or drop the larger counts.",
        )
    catalog, o = load_catalog(args.catalog), overheads()
    planned: list[tuple[Candidate, Bench]] = []
    for name in comma_items(args.gpus, "--gpus", "h100-sxm,l40s"):
        gpu = catalog.resolve(name).gpu
        sky = sky_name(gpu.id, catalog)
        if sky is None:
            raise UserError(f"--gpus {name}: SkyPilot has no accelerator name gpuscout knows "
                            f"for {gpu.id}.", "see 'gpuscout cloud estimator' for the GPUs "
                            "SkyPilot names; drop this one.")  # fmt: skip
        most, why = max_per_machine(gpu)
        if args.gpus_per_node > most:
            raise UserError(f"--gpus-per-node {args.gpus_per_node}: one {gpu.id} machine holds "
                            f"at most {most} ({why}).", "use more --nodes.")  # fmt: skip
        fill = str(args.gpus_per_node)
        plain_name(f"gpuscout-{gpu.id}", "the task name", f"--gpus {name}",
                   fix="give the GPU a plain id in your --catalog file.")  # fmt: skip
        mine = replace(bench, args=tuple(fill if a == "{gpus_per_node}" else a for a in bench.args))
        if (args.gpus_per_node == 1 or args.nodes > 1) and mine.args[-2:] == ("--devices", fill):
            # one GPU needs no --devices; over several nodes each worker (one per node) trains
            # on every GPU it has, and bench refuses --devices beside the cluster's workers
            mine = replace(mine, args=mine.args[:-2])
        planned.append((plan_candidate(catalog, gpu, sky, args.gpus_per_node, args.nodes, mine,
                                       o), mine))  # fmt: skip
    if args.max_usd is not None:
        for c, _ in planned:
            most_usd = c.usd(c.most_s)
            if most_usd is None:
                raise UserError(f"{c.name}: the catalog has no on-demand price for {c.gpu.id}, "
                                f"so --max-usd {args.max_usd:g} cannot be checked.",
                                "add a price with --catalog FILE, or drop the GPU.")  # fmt: skip
            if most_usd > args.max_usd:
                raise UserError(
                    f"{c.name} could cost up to ${most_usd:,.2f} (at its caps, "
                    f"{c.most_s / 60:.0f} min; expected ${c.usd(c.expected_s) or 0:,.2f}), "
                    f"over --max-usd {args.max_usd:g}.",
                    "raise --max-usd, shorten bench --seconds, or use fewer GPUs or nodes.",
                )
    version, tree = _version(), checkout()
    for c, mine in planned:
        path = args.out / f"{c.name}.yaml"
        write_whole(path, yaml_text(task(c, mine, version, tree), _comments(c, mine, tree)),
                    "--out")  # fmt: skip
        print(_summary(c, mine, path))
    for shipped in bench.shipped:
        print(shipped.line())
    if tree is not None:
        print(f"installs gpuscout from your checkout {tree} (workdir: SkyPilot syncs it to each "
              "node, leaving out what .gitignore does), not from the package index")  # fmt: skip
    print(f"assumed (catalog/data/v1/cloud_overheads.csv): start-up {o.startup_s:g} s, install "
          f"{o.install_s:g} s, warm-up {o.warmup_s:g} s, not measured on a cloud; caps "
          f"{o.cap_factor:g} x each, autodown after {o.idle_minutes} idle minutes")  # fmt: skip
    out = shlex.quote(str(args.out))  # a command to paste: the folder as one word
    print(f"next: gpuscout cloud run {out} (or sky launch --down -i {o.idle_minutes} "
          f"FILE.yaml), then gpuscout cloud collect {out}")  # fmt: skip
    return 0


def _money(c: Candidate, seconds: float) -> str:
    usd = c.usd(seconds)
    return "no on-demand price in the catalog" if usd is None else f"${usd:,.2f}"


def _summary(c: Candidate, bench: Bench, path: Path | None) -> str:
    from gpuscout.cloud.names import overheads
    from gpuscout.core.units import fmt_seconds

    o, r = overheads(), c.rental
    price = (f" at {r.provider} ${r.usd_per_hour:g}/h a node ({r.how}; price {c.price_date})"
             if r else "")  # fmt: skip
    return (
        f"{c.name}: {c.sky.accelerators(c.gpus_per_node)} x {c.nodes} node(s)"
        + (f" -> {path}" if path else "")
        + "\n"
        f"  expected {fmt_seconds(c.expected_s)} = start-up {fmt_seconds(o.startup_s)} + "
        f"install {fmt_seconds(o.install_s)} + warm-up {fmt_seconds(o.warmup_s)} + "
        f"measurement {fmt_seconds(bench.measure_s)} ({bench.measure_how}); "
        f"{_money(c, c.expected_s)}{price}\n"
        f"  capped: install {c.setup_cap_s} s, bench {c.run_cap_s} s (timeout), autodown "
        f"{c.idle_minutes} min: at most {fmt_seconds(c.most_s)}, {_money(c, c.most_s)}"
        + (f"\n  note: {c.sky.note}" if c.sky.note else "")
    )


def _comments(c: Candidate, bench: Bench, tree: Path | None) -> list[str]:
    lines = _summary(c, bench, None).splitlines()
    return [
        *(line.strip() for line in lines),
        "",
        f"Launch: gpuscout cloud run DIR, or sky launch --down -i {c.idle_minutes} "
        f"{c.name}.yaml: the cluster is torn down {c.idle_minutes} idle minutes after the job.",
        "The hard caps are the 'timeout' commands in setup and run (SkyPilot has no per-task",
        "wall-clock field in every version) and the autodown above.",
        (f"gpuscout is installed from your checkout {tree} (workdir), as planned from it."
         if tree is not None else
         "gpuscout is installed from the package index at the version that planned it."),
    ]  # fmt: skip


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpuscout")
    except PackageNotFoundError:  # a source tree never installed: no version to pin
        raise UserError(
            "gpuscout is not installed, so the tasks cannot install the same version.",
            "pip install -e . in your checkout, then plan again.",
        ) from None


def run_run(args: argparse.Namespace) -> int:
    from gpuscout.cloud.launch import describe, launch, not_installed, read_tasks

    tasks = read_tasks(args.dir)
    if args.dry_run:
        for t in tasks:
            print(f"would launch {describe(t, args.dir)}")
        return 0
    import importlib.util

    if importlib.util.find_spec("sky") is None:
        raise not_installed()
    missing = 0
    for t in tasks:
        print(f"launching {describe(t, args.dir)}", file=sys.stderr)
        got = launch(t, args.dir)
        missing += got is None
        print(f"{t.name}: " + (f"runs in {got}" if got else "no exported runs fetched"))
    print(f"next: gpuscout cloud collect {shlex.quote(str(args.dir))}")
    return 1 if missing else 0


def run_collect(args: argparse.Namespace) -> int:
    from gpuscout.cloud.launch import exported_files
    from gpuscout.core.text import printable
    from gpuscout.store.exchange import iter_runs
    from gpuscout.store.import_file import import_file

    files = exported_files(args.dir)  # regular files only
    # Every file is read and checked before any is stored: a bad one stores none of them.
    counts = [sum(1 for _ in iter_runs(path)) for path in files]
    new = skipped = 0
    for path, count in zip(files, counts, strict=True):
        # each run once (its content hash): collected again, or again after an
        # interruption, a folder stores what it did not yet store, and nothing twice
        got = import_file(str(path), args.db, adopt=False)
        new, skipped = new + got.count, skipped + got.skipped
        already = f", {got.skipped} already stored" if got.skipped else ""
        name = printable(path.stem)  # a file name from elsewhere: shown, never obeyed
        print(f"  {count} run(s) from candidate {name}: {got.count} new{already}")
    already = f" ({skipped} more were already stored)" if skipped else ""
    print(f"collected {new} new run(s){already}; see them with 'gpuscout runs list', compare "
          "with 'runs compare', and 'calibrate' / 'report' use them")  # fmt: skip
    return 0


def run_estimator(args: argparse.Namespace) -> int:
    from gpuscout.catalog import load_catalog
    from gpuscout.cli.job_args import job_spec
    from gpuscout.cloud import time_estimator
    from gpuscout.cloud.names import catalog_id, skypilot_names

    catalog = load_catalog(args.catalog)
    est = time_estimator(
        job_spec(args), nodes=args.nodes, catalog=catalog, store=args.db, stack=args.stack
    )
    rows = []
    for name in skypilot_names():
        try:
            seconds: int | None = est.seconds(name, args.count)
            why = None
        except UserError as exc:
            seconds, why = None, exc.problem
        rows.append({"skypilot": name, "gpu": catalog_id(name, catalog), "count": args.count,
                     "nodes": args.nodes, "seconds": seconds, "not_predicted": why})  # fmt: skip
    if args.json:
        print_json(rows)
        return 0
    from gpuscout.core.units import fmt_seconds

    print(f"{est.job.label}, on {args.nodes} node(s) x {args.count} GPU(s):")
    for r in rows:
        shown = fmt_seconds(r["seconds"]) if r["seconds"] else f"- ({r['not_predicted']})"
        print(f"  {r['skypilot']:<16} {r['gpu'] or '-':<16} {r['seconds'] or '-':>10} s  {shown}")
    for line in est.model.notes:
        print(f"note: {line}")
    return 0
