"""Launch a plan's tasks through SkyPilot's Python API, fetch each exported run file, and find
those files again for ``runs import``.

NOT RUN AGAINST A CLOUD: gpuscout's tests have no cloud account and do not install SkyPilot, so
:func:`launch` is written from SkyPilot's documented API (0.9 and later: every call returns a
request that ``sky.stream_and_get`` waits on) and checked only as far as its refusal without
SkyPilot and the dry run (:func:`read_tasks`, :func:`describe`). Each cluster is launched with
``down=True`` and ``idle_minutes_to_autostop`` (the autodown of ``sky launch --down -i``), so
it is torn down that long after its job ends even if this process dies; ``sky.down`` tears it
down at once when the file is fetched. The file is fetched with ``rsync`` through the SSH
host entry SkyPilot writes for each cluster, as SkyPilot's docs download files.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuscout.cloud.plain_names import plain_name
from gpuscout.cloud.plan import EXPORT_ENV, IDLE_ENV
from gpuscout.core.errors import UserError
from gpuscout.core.text import printable

RESULTS = "results"  # DIR/results/<task>.json: what a task leaves, what collect reads
# SkyPilot's autostop minutes a task may ask for: a negative value cancels autostop (the
# cluster would bill until someone notices), so it is refused; more than a day is no plan's.
IDLE_MINUTES = range(1, 24 * 60 + 1)


def not_installed() -> UserError:
    """The one line ``cloud run`` says where SkyPilot is missing."""
    return UserError(
        "SkyPilot is not installed: pip install 'gpuscout[cloud]'.",
        "install it (and enable a cloud: sky check), or see the plan with --dry-run.",
    )


@dataclass(frozen=True)
class PlannedTask:
    """A task file of a plan, as ``cloud run`` needs it."""

    path: Path
    name: str  # the task's name, used as its cluster's
    accelerators: str
    nodes: int
    export: str  # the exported file's name on the head node, under ~/gpuscout-cloud
    idle_minutes: int


def read_tasks(folder: Path) -> list[PlannedTask]:
    """The task files ``cloud plan`` wrote in ``folder``, in name order."""
    if not folder.is_dir():
        raise UserError(f"'{folder}' is not a folder.", "pass the --out folder of 'cloud plan'.")
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise UserError(f"'{folder}' holds no task files (*.yaml).", "run 'gpuscout cloud plan'.")
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:  # cloud plan then wrote JSON (YAML too): read as JSON
        yaml = None
    return [_task(path, yaml) for path in files]


def _load(path: Path, yaml: Any) -> Any:
    """A task file's contents: PyYAML where installed (SkyPilot needs it); else the JSON that
    ``cloud plan`` writes without PyYAML, after its comment lines. A file PyYAML wrote cannot
    be read without it: said, with how to install it."""
    text = path.read_text(encoding="utf-8")
    if yaml is not None:
        return yaml.safe_load(text)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        raise UserError(
            f"{path}: a YAML task file, which reading needs PyYAML for.",
            "pip install 'gpuscout[cloud]' (SkyPilot and PyYAML), or write the plan again "
            "here with 'gpuscout cloud plan'.",
        ) from None


def _task(path: Path, yaml: Any) -> PlannedTask:
    errors: tuple[type[Exception], ...] = (
        OSError, UnicodeDecodeError, KeyError, TypeError, ValueError,
        *((yaml.YAMLError,) if yaml is not None else ()),
    )  # fmt: skip
    try:
        data = _load(path, yaml)
        envs = data["envs"]
        t = PlannedTask(
            path, str(data["name"]), str(data["resources"]["accelerators"]),
            int(data.get("num_nodes", 1)), str(envs[EXPORT_ENV]), int(envs[IDLE_ENV]),
        )  # fmt: skip
    except errors as exc:
        raise UserError(
            f"{path}: not a task file 'cloud plan' wrote ({type(exc).__name__}: {exc}).",
            "write the folder again with 'gpuscout cloud plan'.",
        ) from None
    # The file is data from elsewhere: its names become a cluster, an rsync source and a
    # file under DIR/results, so they are plain names, never paths or options.
    plain_name(t.name, "its task name", str(path))
    plain_name(t.export, f"its export name ({EXPORT_ENV})", str(path), suffix=".json")
    if t.idle_minutes not in IDLE_MINUTES:
        raise UserError(
            f"{path}: {IDLE_ENV} {t.idle_minutes}: autodown after that many idle minutes is "
            f"not a plan's (a negative value cancels autostop).",
            f"use {IDLE_MINUTES.start} to {IDLE_MINUTES.stop - 1}, or write the folder again "
            "with 'gpuscout cloud plan'.",
        )
    if t.nodes < 1:
        raise UserError(f"{path}: num_nodes {t.nodes} is no number of machines.",
                        "write the folder again with 'gpuscout cloud plan'.")  # fmt: skip
    return t


def describe(t: PlannedTask, folder: Path) -> str:
    """What launching ``t`` does, in one line (the dry run prints it), shown escaped: the task
    file is a file from elsewhere, and its accelerators line is printed as read."""
    return printable(
        f"{t.name}: {t.accelerators} x {t.nodes} node(s) from {t.path.name}: "
        f"sky.launch(task, cluster_name='{t.name}', down=True, "
        f"idle_minutes_to_autostop={t.idle_minutes}); wait for the job; rsync "
        f"{t.name}:gpuscout-cloud/{t.export} to {folder / RESULTS / t.export}; sky.down"
    )


def launch(t: PlannedTask, folder: Path) -> Path | None:
    """Launch ``t``, wait for its job, fetch its exported runs, tear it down. The fetched
    file, or None when there was none to fetch (the job failed before it exported)."""
    if importlib.util.find_spec("sky") is None:
        raise not_installed()
    sky = importlib.import_module("sky")
    task = sky.Task.from_yaml(str(t.path))
    request = sky.launch(
        task, cluster_name=t.name, down=True, idle_minutes_to_autostop=t.idle_minutes
    )
    try:
        job_id, _handle = sky.stream_and_get(request)
        sky.tail_logs(t.name, job_id, follow=True)  # returns when the job ends
        target = folder / RESULTS / t.export
        target.parent.mkdir(parents=True, exist_ok=True)
        # '--' before the values: a name is never an option (and is a plain name anyway)
        fetched = subprocess.run(
            ["rsync", "-az", "--", f"{t.name}:gpuscout-cloud/{t.export}", str(target)],
            check=False,
        )
        return target if fetched.returncode == 0 and target.is_file() else None
    finally:
        try:
            sky.stream_and_get(sky.down(t.name))
        except Exception as exc:  # autodown still ends it within its idle minutes
            print(
                f"gpuscout: could not tear down {t.name} ({exc}); SkyPilot's autodown ends it "
                f"{t.idle_minutes} idle minutes after its job; check with 'sky status'",
                file=sys.stderr,
            )


def exported_files(folder: Path) -> list[Path]:
    """The exported run files a plan's folder holds: ``results/*.json`` (what ``cloud run``
    fetches), or ``*.json`` in the folder itself (files fetched by hand); regular files only,
    so a link planted there is refused rather than followed."""
    if not folder.is_dir():
        raise UserError(f"'{folder}' is not a folder.", "pass the --out folder of 'cloud plan'.")
    results = folder / RESULTS
    if results.is_symlink():
        raise UserError(f"'{results}' is a link: collect reads only the files 'cloud run' "
                        "fetched, never through a link.", "replace it with a folder.")  # fmt: skip
    files = sorted(results.glob("*.json")) + sorted(folder.glob("*.json"))
    for path in files:  # data only: a link, a FIFO (a read that never ends), a folder: refused
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            raise UserError(f"cannot read '{path}': {exc.strerror}.",
                            "remove it from the folder.") from None  # fmt: skip
        if not stat.S_ISREG(mode):
            raise UserError(
                f"'{path}' is not a regular file (a link, folder or device): collect reads only "
                "the files 'cloud run' fetched, never through a link.",
                "replace it with the file itself, or remove it.",
            )
    if not files:
        raise UserError(
            f"'{folder}' holds no exported run files ({RESULTS}/*.json or *.json).",
            "run 'gpuscout cloud run' on it first, or put the files you fetched there.",
        )
    return files


__all__ = ["PlannedTask", "describe", "exported_files", "launch", "not_installed", "read_tasks"]
