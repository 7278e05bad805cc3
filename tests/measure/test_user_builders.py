"""A user's model that cannot be measured is refused before measuring, not stored (issue 17).

A builder that raised, needed an argument or had no input layer used to become a stored
``error`` run (exit 1) while one returning an ``int`` was refused (exit 2). Everything found
while building and inspecting the model, before the first measured step, is now a refusal:
exit 2, one line naming the builder and a fix, no run stored. Running out of memory while
building stays a stored ``oom`` run (tests/cli/test_cli.py): that is the device's answer.
Each case starts a real TensorFlow child, so they share one test.
"""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import pytest

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig
from gpuscout.measure import bench
from tests.conftest import run_cli

pytest.importorskip("tensorflow")
MODELS = Path(__file__).parent.parent / "data" / "user_models.py"


def _not_keras(tmp: Path) -> str:
    """A zip archive (so it passes the check made without TensorFlow) that Keras cannot read."""
    path = tmp / "notes.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "not a model")
    return str(path)


def test_a_builder_that_raises_is_refused_through_the_cli_and_nothing_stored(
    tmp_path: Path,
) -> None:
    """End to end once (a real measuring child); the other cases in-process below."""
    db = tmp_path / "runs.sqlite"
    model = f"{MODELS}:raises"
    r = run_cli("bench", "--model", model, "--steps", "4", "--db", str(db), "--json")
    assert r.code == 2, r.err
    assert "Traceback" not in r.err and r.out == ""
    errors = [line for line in r.err.splitlines() if line.startswith("gpuscout: error:")]
    assert len(errors) == 1 and "To fix:" in errors[0], r.err
    assert f"{model} raised ValueError at line " in errors[0], r.err
    if db.exists():
        assert sqlite3.connect(db).execute("select count(*) from runs").fetchone() == (0,)


CASES = {
    "needs_an_argument": (
        lambda _: f"{MODELS}:needs_an_argument",
        "needs the argument width, which gpuscout cannot pass",
    ),
    "no_input_layer": (
        lambda _: f"{MODELS}:no_input_layer",
        "returned a model without an input layer",
    ),
    "not_keras": (
        _not_keras,
        "is not a readable Keras file: Keras said KeyError: There is no item named 'config.json'",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_refused_before_measuring(name: str, tmp_path: Path) -> None:
    """The measuring code raises UserError, which the child reports as a refusal (exit 2,
    nothing stored: the test above and tests/measure/test_runner.py)."""
    model, says = CASES[name]
    config = BenchConfig(model=model(tmp_path), steps=4, warmup_steps=1, device="CPU:0")
    with pytest.raises(UserError) as refused:
        bench(config, monitor=False)
    assert says in refused.value.problem and refused.value.fix, refused.value.one_line()
