"""After `make run`, the README's next command works (issue 42): `make run` installs gpuscout
into a venv that is not on PATH, so it ends by saying how to reach it, and the README's first
block of gpuscout commands activates that venv before it runs one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_ends_by_saying_how_to_reach_gpuscout() -> None:
    """The recipe `make run` would run (``make -n``: printed, nothing run), in a fresh copy
    of the Makefile alone so no stamp file makes it skip a step."""
    # outside any make that runs this test (make test): its MAKEFLAGS would add lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "-f", str(ROOT / "Makefile"), "run",
         "BACKEND=cpu"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "gpuscout scout --html report.html" in done.stdout
    assert last.startswith("echo") and ". .venv/bin/activate" in last


def test_the_readme_activates_the_venv_before_its_first_gpuscout_command() -> None:
    text = (ROOT / "README.md").read_text()
    after = text.split("make test", 1)[1]  # past the two commands of the opening block
    block = re.search(r"```bash\n(.*?)```", after, re.S)
    assert block is not None
    commands = [c for c in block.group(1).splitlines() if c.strip()]
    first = next(i for i, c in enumerate(commands) if c.startswith("gpuscout "))
    assert ". .venv/bin/activate" in commands[:first]
