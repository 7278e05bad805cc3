"""Rows for a user's builder outside ``bench`` (issue 43): ``predict``, ``cost`` and
``advise`` trace a ``--model`` in the measuring child, so a builder that exits, crashes or
never returns is one line naming it (exit 2), never a silent exit 0 or a hang, and a ``.keras``
file whose config would unpack to more than Keras should read is refused before it is read.

Each row that traces starts a real child (a TensorFlow start-up); the hanging builder and the
unusable limits need an environment variable, so they are tests of their own below, through
the same promise (:func:`tests.adversarial.table.run_case`).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.adversarial.table import Case, cases, run_case

BUILDERS = """
import os
import sys
import time


def exits():
    sys.exit(0)


def exits_hard():
    os._exit(0)


def segfaults():
    import ctypes

    return ctypes.string_at(0)


def sleeps():
    with open(os.path.join(os.path.dirname(__file__), "slept"), "w") as mark:
        mark.write("the builder ran")  # so the test knows the builder, not the import, was stopped
    time.sleep(3600)
"""
FILES = {"b.py": BUILDERS}
JOB = ("--samples", "100000", "--epochs", "1")
EXITED = "ended the process with exit code 0 while its step was traced"
KERAS_JSON_LIMIT = 64 * 2**20  # measure.user_spec.MAX_KERAS_JSON_BYTES, said as the probe sees it


def huge_config_keras(folder: Path) -> Path:
    """A small .keras file (deflated spaces) whose config.json unpacks past the limit."""
    path = folder / "huge.keras"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("config.json", "w", force_zip64=True) as config:
            block = b" " * 2**20
            for _ in range(KERAS_JSON_LIMIT // 2**20 + 1):
                config.write(block)
        archive.writestr("metadata.json", "{}")
    return path


def _write_huge_keras(tmp: Path) -> None:
    huge_config_keras(tmp)


CASES = [
    Case(("predict", "--model", "{tmp}/b.py:exits", "--gpus", "h100", "--json"), 2, EXITED, FILES),
    Case(("cost", "--model", "{tmp}/b.py:exits_hard", *JOB, "--json"), 2, EXITED, FILES),
    Case(
        ("advise", "--model", "{tmp}/b.py:segfaults", *JOB),
        2,
        "b.py:segfaults crashed with SIGSEGV while its step was traced",
        FILES,
    ),
    Case(
        ("predict", "--model", "{tmp}/huge.keras", "--gpus", "h100"),
        2,
        "huge.keras': its config.json unpacks to 68 MB",
        setup=_write_huge_keras,
    ),
]


@cases(CASES)
def test_row(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_a_builder_that_never_returns_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder that sleeps for ever, stopped at the limit the environment sets (the same
    answer at any speed: it never returns). The limit counts from the framework's import on,
    so a 1.5 s limit stops the builder itself, which marks that it ran (review of issue 43:
    the import alone used to take the whole limit, so the row passed without a builder)."""
    monkeypatch.setenv("GPUSCOUT_TRACE_TIMEOUT", "1.5")
    case = Case(
        ("predict", "--model", "{tmp}/b.py:sleeps", "--gpus", "h100"),
        2,
        "tracing its step said nothing for 1.5 s and was stopped (GPUSCOUT_TRACE_TIMEOUT)",
        FILES,
    )
    run_case(case, tmp_path, monkeypatch)
    assert (tmp_path / "slept").read_text() == "the builder ran"


@pytest.mark.parametrize(
    ("name", "value"),
    [("GPUSCOUT_TRACE_TIMEOUT", "inf"), ("GPUSCOUT_TRACE_MEMORY_GB", "lots")],
)
def test_an_unusable_limit_is_refused(
    name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    case = Case(
        ("predict", "--model", "{tmp}/b.py:exits", "--gpus", "h100"),
        2,
        f"{name}='{value}' is not a number of",
        FILES,
    )
    run_case(case, tmp_path, monkeypatch)
