"""A command started with its standard output closed (``gpuscout specs >&-``) says so in one
line and exits 2, as ``ls >&-`` does, instead of a traceback (issue 31)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CLI = "import sys\nfrom gpuscout.cli import main\nsys.exit(main(sys.argv[1:]))\n"


@pytest.mark.parametrize("args", [["specs", "4090"], ["specs", "4090", "--json"], ["--version"]])
def test_a_closed_stdout_is_one_line_exit_2(args: list[str]) -> None:
    r = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),  # the case itself: fd 1 closed
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "gpuscout: error: standard output is closed: nothing could be shown. To fix: leave it "
        "open, or send it to /dev/null."
    ]
