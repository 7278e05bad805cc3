"""How long the commands that do not measure take, start to finish, as a user runs them.

Each command runs N times in a fresh interpreter (the installed ``gpuscout`` script), in turns,
so machine noise spreads over all of them; the median and the range are printed. ``bench
--help`` is the floor (interpreter + argparse); ``runs list`` loads the results store
(SQLAlchemy), which the catalog commands must not.

    python benchmarks/startup.py [N]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "gpuscout --help": ["--help"],
    "specs 3090 4090 a100-40gb a100-80gb h100-sxm": [
        "specs", "3090", "4090", "a100-40gb", "a100-80gb", "h100-sxm",
    ],
    "specs (all 23, list)": ["specs"],
    "audit --file examples/article_claims.csv": [
        "audit", "--file", str(ROOT / "examples" / "article_claims.csv"),
    ],
    "runs list (store, for comparison)": ["runs", "list"],
}  # fmt: skip


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    exe = shutil.which("gpuscout", path=str(Path(sys.executable).parent)) or "gpuscout"
    env = {**os.environ, "GPUSCOUT_DB": str(Path(tempfile.mkdtemp()) / "runs.sqlite")}
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(n):
        for name, args in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run([exe, *args], env=env, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    print(f"{n} runs each, in turns; wall time of the whole process")
    for name, values in times.items():
        print(
            f"  {name:48s} median {statistics.median(values):.3f} s"
            f"  (min {min(values):.3f}, max {max(values):.3f})"
        )


if __name__ == "__main__":
    main()
