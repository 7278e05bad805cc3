"""A stored run as TensorBoard scalars (``--tensorboard DIR``), as article 000's TensorBoard
callback would show it: every step's time and throughput, the run's summary figures, and the
device monitor's series (:func:`gpuscout.publish.series.run_scalars`).

Written after the run from what was stored, in the parent process, so the measurement is never
slowed by summary writes. Each run gets its own folder (``run-ID-WORKLOAD``) for side-by-side
comparison. The event files are written by TensorFlow (the measuring backend's ``summary``
module), so this needs TensorFlow installed; the folder is checked before anything is measured.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult
from gpuscout.publish.series import run_scalars


def run_folder(logdir: Path, result: RunResult) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.workload)[:60]
    return logdir / f"run-{result.id}-{name}"


def check_logdir(logdir: Path) -> None:
    """UserError unless ``logdir`` can be created (checked before measuring, and again after)."""
    try:
        logdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot write --tensorboard '{logdir}': {exc.strerror}.", "pass a writable folder."
        ) from None


def write_tensorboard(result: RunResult, logdir: Path) -> Path:
    """Write ``result`` under ``logdir``; return the run's folder."""
    from gpuscout.measure.backends.tensorflow.summary import write_scalars

    folder = run_folder(logdir, result)
    check_logdir(folder)
    write_scalars(folder, [(f"{s.group}/{s.name}", s.value, s.step) for s in run_scalars(result)])
    return folder
