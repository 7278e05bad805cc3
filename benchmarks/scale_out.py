"""What data parallelism costs and gives on this machine, measured side by side.

Four set-ups of the same workload, in turns (so machine noise spreads over all of them), each
a real ``gpuscout`` command stored in a scratch database:

- one device, no strategy (plain ``bench``);
- ``--devices 1``: MirroredStrategy on one device, the base of ``--scaling`` sweeps;
- ``--devices 2``: MirroredStrategy on two devices (logical CPU devices without a GPU);
- ``launch --workers 2``: MultiWorkerMirroredStrategy, two local workers;

and, where JAX is installed, the first three again with ``--backend jax`` (``--devices`` is then
a jax.sharding Mesh over XLA host devices).

Printed: the median of each set-up's samples/s over the rounds, and ratios against the plain
run of the same backend (strategy overhead) and scaling efficiency against its ``--devices 1``.

    python benchmarks/scale_out.py [ROUNDS] [SECONDS] [WORKLOAD]
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    seconds = sys.argv[2] if len(sys.argv) > 2 else "20"
    workload = sys.argv[3] if len(sys.argv) > 3 else "mlp"
    exe = shutil.which("gpuscout", path=str(Path(sys.executable).parent)) or "gpuscout"
    db = str(Path(tempfile.mkdtemp()) / "runs.sqlite")
    bench = ["bench", "--workload", workload, "--seconds", seconds]
    setups = {
        "plain (no strategy)": bench,
        "--devices 1": [*bench, "--devices", "1"],
        "--devices 2": [*bench, "--devices", "2"],
        "launch --workers 2": ["launch", "--workers", "2", "--", *bench],
    }
    if importlib.util.find_spec("jax") is not None:
        jax = [*bench, "--backend", "jax"]
        setups |= {
            "jax plain": jax,
            "jax --devices 1": [*jax, "--devices", "1"],
            "jax --devices 2": [*jax, "--devices", "2"],
        }
    rates: dict[str, list[float]] = {name: [] for name in setups}
    for _ in range(rounds):
        for name, args in setups.items():
            where = ["--db", db, "--json"]
            command = [exe, *args[:1], *where, *args[1:]]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            rates[name].append(json.loads(out)["samples_per_second"]["median"])
    median = {name: statistics.median(v) for name, v in rates.items()}
    print(f"{workload}, {rounds} rounds in turns, --seconds {seconds} each; samples/s (median)")
    for name, value in median.items():
        on_jax = name.startswith("jax")
        plain = median["jax plain" if on_jax else "plain (no strategy)"]
        one = median["jax --devices 1" if on_jax else "--devices 1"]
        replicas = 2 if "2" in name else 1
        print(
            f"  {name:22s} {value:10,.0f}  x{value / plain:.2f} of plain"
            f"  efficiency vs --devices 1: {value / (replicas * one):.0%}"
            f"  (rounds: {', '.join(f'{v:,.0f}' for v in rates[name])})"
        )


if __name__ == "__main__":
    main()
