"""Run every row of the adversarial table (tests/adversarial) as a real ``gpuscout`` process.

The tests run the rows in-process for speed; this is the probe a user would run: a fresh
interpreter per row, its own results store, and a count of what the CLI promised never to do
(a traceback, an exit code other than the row's, JSON with Infinity or NaN).

    .venv/bin/python scripts/adversarial_probe.py          # all rows; exit 1 if any failed
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.adversarial.table import Case  # noqa: E402

CLI = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def rows() -> list[Case]:
    import tests.adversarial as package

    found: list[Case] = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("test_"):
            module = importlib.import_module(f"tests.adversarial.{info.name}")
            found.extend(getattr(module, "CASES", []))
    return found


def probe(case: Case) -> list[str]:
    """What this row did that it should not have, as short texts (empty: it kept its promise)."""
    with tempfile.TemporaryDirectory(prefix="gpuscout-probe-") as folder:
        tmp = Path(folder)
        for name, text in case.files.items():
            (tmp / name).write_text(text)
        if case.setup:
            case.setup(tmp)
        env = {**os.environ, **case.env, "GPUSCOUT_DB": str(tmp / "runs.sqlite"),
               "COLUMNS": "200", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
        for name in [n for n, v in case.env.items() if not v]:  # "": unset (Case.env)
            env.pop(name, None)
        args = [a.replace("{tmp}", str(tmp)) for a in case.args]
        proc = subprocess.run(
            [sys.executable, "-c", CLI, *args], capture_output=True, text=True, env=env,
            timeout=600, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    wrong = []
    if "Traceback" in proc.stderr:
        wrong.append("traceback")
    if proc.returncode != case.code:
        wrong.append(f"exit {proc.returncode}, expected {case.code}")
    shown = proc.stderr if case.code else proc.stdout
    if case.says not in shown:
        wrong.append(f"did not say {case.says!r}")
    if "--json" in args and proc.returncode == 0:
        try:
            json.loads(proc.stdout, parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))
        except ValueError as exc:
            wrong.append(f"invalid JSON ({exc})")
    return wrong


def main() -> int:
    table = rows()
    start, failures, tracebacks = time.monotonic(), 0, 0
    for case in table:
        wrong = probe(case)
        tracebacks += "traceback" in wrong
        if wrong:
            failures += 1
            print(f"FAIL gpuscout {' '.join(case.args)}: {'; '.join(wrong)}")
    print(
        f"{len(table)} adversarial rows as real processes in {time.monotonic() - start:.0f} s: "
        f"{len(table) - failures} kept their promise, {failures} did not, "
        f"{tracebacks} tracebacks"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
