"""A plan sends your ``--model`` file's folder, so the modules beside it that it imports
travel too, and puts that folder on the node's PYTHONPATH; a folder too large to be a model's
is refused, saying what would have been sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from gpuscout.cloud.inputs import MAX_FILES
from tests.conftest import run_in_process

MODEL = "from layers import width\n\n\ndef build():\n    return width()\n"


def test_the_models_folder_travels_and_its_neighbour_imports_there(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "my.py").write_text(MODEL)
    (src / "layers.py").write_text("def width():\n    return 64\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "feed.py").write_text("def make():\n    return None\n")
    r = run_in_process("cloud", "plan", "--out", str(tmp_path / "out"), "--gpus", "l4", "--",
                       "bench", "--model", f"{src}/my.py:build", "--data", f"{data}/feed.py:make",
                       "--seconds", "10")  # fmt: skip
    assert r.code == 0, r.err
    assert f"ships {src} (2 file(s)" in r.out and "for bench --model" in r.out
    assert f"ships {data} (1 file(s)" in r.out and "for bench --data" in r.out
    task = yaml.safe_load(next((tmp_path / "out").glob("*.yaml")).read_text())
    assert task["file_mounts"] == {
        "/tmp/gpuscout-inputs/model": str(src), "/tmp/gpuscout-inputs/data": str(data)
    }  # fmt: skip
    run = task["run"]
    assert "--model /tmp/gpuscout-inputs/model/my.py:build" in run
    assert "--data /tmp/gpuscout-inputs/data/feed.py:make" in run
    export = run.splitlines()[0]
    assert export == ('export PYTHONPATH="/tmp/gpuscout-inputs/model:/tmp/gpuscout-inputs/data'
                      '${PYTHONPATH:+:$PYTHONPATH}"')  # fmt: skip
    # On a node the mounts are those folders: the file, loaded as bench loads it (by path,
    # not on sys.path), imports its neighbour through the PYTHONPATH the task sets.
    here = export.replace("/tmp/gpuscout-inputs/model", str(src)).replace(
        "/tmp/gpuscout-inputs/data", str(data)
    )
    load = (
        "import importlib.util as u, sys\n"
        f"s = u.spec_from_file_location('m', {str(src / 'my.py')!r})\n"
        "m = u.module_from_spec(s); s.loader.exec_module(m); print(m.build())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    node = subprocess.run(["bash", "-c", f'{here}\ncd /\n"$0" -c "$1"', sys.executable, load],
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert node.returncode == 0 and node.stdout.strip() == "64", node.stderr


def test_model_and_data_in_one_folder_send_it_once(tmp_path: Path) -> None:
    (tmp_path / "my.py").write_text(MODEL)
    (tmp_path / "layers.py").write_text("def width():\n    return 64\n")
    r = run_in_process("cloud", "plan", "--out", str(tmp_path / "out"), "--gpus", "l4", "--",
                       "bench", "--model", f"{tmp_path}/my.py:build", "--data",
                       f"{tmp_path}/my.py:build", "--seconds", "10")  # fmt: skip
    assert r.code == 0, r.err
    assert "for bench --model and --data" in r.out
    task = yaml.safe_load(next((tmp_path / "out").glob("*.yaml")).read_text())
    assert task["file_mounts"] == {"/tmp/gpuscout-inputs/model": str(tmp_path)}
    assert "--data /tmp/gpuscout-inputs/model/my.py:build" in task["run"]


def test_a_project_folder_sends_the_file_alone_and_says_so(tmp_path: Path) -> None:
    """Review of issue 43: a model beside a .venv (or .git, or data) is an ordinary layout; the
    plan refused it for its folder's size. It sends the file alone, as before the folder was
    sent, and says why the modules beside it do not travel (not on PYTHONPATH either)."""
    (tmp_path / "my.py").write_text(MODEL)
    venv = tmp_path / ".venv"
    venv.mkdir()
    for i in range(MAX_FILES):
        (venv / f"f{i}.py").write_text("x")
    r = run_in_process("cloud", "plan", "--out", str(tmp_path / "out"), "--gpus", "l4", "--",
                       "bench", "--model", f"{tmp_path}/my.py:build")  # fmt: skip
    assert r.code == 0, r.err
    assert f"ships {tmp_path / 'my.py'} alone" in r.out and "a .venv" in r.out
    task = yaml.safe_load(next((tmp_path / "out").glob("*.yaml")).read_text())
    assert task["file_mounts"] == {"/tmp/gpuscout-inputs/model/my.py": str(tmp_path / "my.py")}
    assert "--model /tmp/gpuscout-inputs/model/my.py:build" in task["run"]
    assert "PYTHONPATH" not in task["run"]
