"""How ``gpuscout report`` scales: a report over a team-sized store (default 10,000 runs).

Builds a store with N realistic runs (``store_scale.make_runs``: mixed workloads, devices and
precisions, OOM and error runs, step times and monitor timelines) through ``runs import``, then
times ``gpuscout report --html --md`` as a user runs it, in a fresh process: wall time, peak
resident memory of that process alone (``ru_maxrss`` through a small wrapper process) and the
size of each file written. Beyond ``DETAIL_LIMIT`` runs the report shows the newest run by run
and aggregates all of them (``gpuscout.report.summary``).

    python benchmarks/report_scale.py [N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


from gpuscout.report.summary import DETAIL_LIMIT
from store_scale import timed, timed_cpu, write_import_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=10_000, help="runs (default 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="leave the database and the reports here")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="gpuscout-report-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    data, db = folder / "runs.json", folder / "runs.sqlite"
    html, md = folder / "report.html", folder / "report.md"
    db.unlink(missing_ok=True)
    write_import_file(data, args.n, args.seed)
    env = {**os.environ, "GPUSCOUT_DB": str(db)}
    code, wall, rss = timed(["runs", "import", str(data)], env)
    if code != 0:
        sys.exit(f"runs import failed (exit {code}): run it by hand to see why")
    print(f"store: {args.n:,} runs imported in {wall:.1f} s ({db.stat().st_size / 1e6:,.1f} MB)")
    print(
        f"report: the newest {min(args.n, DETAIL_LIMIT)} runs in detail, all {args.n:,} aggregated"
    )
    print(f"load average before the report: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    code, wall, rss, cpu = timed_cpu(["report", "--html", str(html), "--md", str(md)], env)
    if code != 0:
        sys.exit(f"report failed (exit {code}) after {wall:.1f} s")
    print(f"{'command':<22} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>12} ", end="")
    print(f"{'HTML MB':>8} {'MD MB':>6}")
    print(
        f"{'report --html --md':<22} {wall:>7.1f} {cpu:>7.1f} {rss:>12.0f} "
        f"{html.stat().st_size / 1e6:>8.2f} {md.stat().st_size / 1e6:>6.2f}"
    )
    if args.keep is None:
        for path in (data, db, html, md):
            path.unlink(missing_ok=True)
        for extra in folder.iterdir():  # SQLite's -wal and -shm files
            extra.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
