"""``cloud run`` reads a task file as data: its names are plain names (never a path nor an
option), its autodown minutes are a plan's, and the one subprocess it starts (``rsync``) gets
``--`` before the values.

SkyPilot is not installed here and no cloud is reached: :func:`launch` is called with a
stand-in ``sky`` module (SkyPilot has no CPU equivalent) and a stand-in ``rsync`` on PATH
that records its arguments and writes the file it was asked for.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

from gpuscout.cloud.launch import launch, read_tasks
from gpuscout.core.errors import UserError


def _task_file(folder: Path, name: str = "gpuscout-l4-1x1", export: str | None = None,
               idle: str = "5") -> Path:  # fmt: skip
    """A task file as 'cloud plan' writes it without PyYAML (JSON, which is YAML too)."""
    body = {
        "name": name,
        "resources": {"accelerators": "L4:1"},
        "num_nodes": 1,
        "envs": {
            "GPUSCOUT_CLOUD_EXPORT": export or f"{name}.json",
            "GPUSCOUT_CLOUD_IDLE_MINUTES": idle,
        },
        "run": "true\n",
    }
    path = folder / "t.yaml"
    path.write_text("# a plan\n" + json.dumps(body))
    return path


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"name": "-e sh -c id"}, "its task name '-e sh -c id' is not a plain name"),
        ({"name": "-e"}, "its task name '-e' is not a plain name"),
        ({"name": "../up"}, "its task name '../up' is not a plain name"),
        ({"export": "../../../../x.json"}, "export name (GPUSCOUT_CLOUD_EXPORT) "
                                           "'../../../../x.json' is not a plain name"),
        ({"export": "/etc/x.json"}, "'/etc/x.json' is not a plain name"),
        ({"export": "runs.sqlite"}, "ending in '.json'"),
        ({"idle": "-1"}, "GPUSCOUT_CLOUD_IDLE_MINUTES -1: autodown after that many"),
        ({"idle": "0"}, "GPUSCOUT_CLOUD_IDLE_MINUTES 0"),
    ],
)  # fmt: skip
def test_a_task_files_names_and_minutes_are_checked(
    tmp_path: Path, fields: dict[str, str], says: str
) -> None:
    _task_file(tmp_path, **fields)
    with pytest.raises(UserError) as caught:
        read_tasks(tmp_path)
    assert says in caught.value.problem


def test_rsync_gets_double_dash_before_the_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = tmp_path / "plan"
    plan.mkdir()
    _task_file(plan)
    (task,) = read_tasks(plan)
    bin_dir, log = tmp_path / "bin", tmp_path / "rsync.args"
    bin_dir.mkdir()
    rsync = bin_dir / "rsync"  # records its argv, then writes the destination (the last one)
    rsync.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(log)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
        "open(sys.argv[-1], 'w').write('{}')\n"
    )
    rsync.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    calls: list[str] = []
    sky = types.ModuleType("sky")  # SkyPilot's API as launch() calls it
    sky.Task = types.SimpleNamespace(from_yaml=lambda path: ("task", path))  # type: ignore[attr-defined]
    sky.launch = lambda task, **kw: calls.append(f"launch {kw['cluster_name']}")  # type: ignore[attr-defined]
    sky.stream_and_get = lambda request: (1, None)  # type: ignore[attr-defined]
    sky.tail_logs = lambda name, job, follow: calls.append(f"tail {name}")  # type: ignore[attr-defined]
    sky.down = lambda name: calls.append(f"down {name}")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sky", sky)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    got = launch(task, plan)
    target = plan / "results" / "gpuscout-l4-1x1.json"
    assert got == target
    assert json.loads(log.read_text()) == [
        "-az", "--", "gpuscout-l4-1x1:gpuscout-cloud/gpuscout-l4-1x1.json", str(target)
    ]  # fmt: skip
    assert calls == ["launch gpuscout-l4-1x1", "tail gpuscout-l4-1x1", "down gpuscout-l4-1x1"]


def test_a_task_files_accelerators_are_shown_escaped_in_the_dry_run(tmp_path: Path) -> None:
    """Review of issue 43: the task file's accelerators line reached the terminal raw."""
    from gpuscout.cloud.launch import describe

    path = _task_file(tmp_path)
    path.write_text(path.read_text().replace('"L4:1"', '"L4:1\\u001b[31mRED"'))
    (task,) = read_tasks(tmp_path)
    line = describe(task, tmp_path)
    assert "\x1b" not in line and "L4:1\\x1b[31mRED" in line
