"""A stored run as TensorBoard scalars (``--tensorboard DIR``), as the articles' TensorBoard
callback would show it: every step's time and throughput, the run's summary figures, and the
device monitor's series.

Written after the run from what was stored, in the parent process, so the measurement is never
slowed by summary writes. Each run gets its own folder (``run-ID-WORKLOAD``) for side-by-side
comparison. Monitor series use milliseconds since the run started as their step.

The summaries are written with TensorFlow's core ``tf.summary.write`` and the scalars plugin's
metadata, which is what ``tf.summary.scalar`` does, so the ``tensorboard`` package (a web
server and its dependencies) is needed only to look at them, not to write them.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuscout.errors import UserError
from gpuscout.measure.tf_runtime import import_tensorflow
from gpuscout.records import RunResult


def run_folder(logdir: Path, result: RunResult) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.workload)[:60]
    return logdir / f"run-{result.id}-{name}"


def write_tensorboard(result: RunResult, logdir: Path) -> Path:
    """Write ``result`` under ``logdir``; return the run's folder."""
    folder = run_folder(logdir, result)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write --tensorboard '{logdir}': {exc.strerror}.", None) from None
    tf = import_tensorflow()
    tf.config.set_visible_devices([], "GPU")  # a few scalars: no reason to touch a GPU
    writer = tf.summary.create_file_writer(str(folder))
    batch = result.batch_size
    plugin = tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars")
    scalars = tf.compat.v1.SummaryMetadata(plugin_data=plugin).SerializeToString()

    def scalar(tag: str, value: float, step: int) -> None:
        tf.summary.write(tag, tf.constant(float(value), tf.float32), step, metadata=scalars)

    with writer.as_default():
        for i, seconds in enumerate(result.step_times_s):
            scalar("step/time_s", seconds, step=i)
            if seconds > 0:
                scalar("step/samples_per_second", batch / seconds, step=i)
        summary = {f"run/{name}": value for name, value in result.headline().items()}
        for tag, value in summary.items():
            if value is not None:
                scalar(tag, value, step=0)
        timeline = result.monitor_timeline
        for column, values in timeline.items():
            if column == "t":
                continue
            for t, value in zip(timeline["t"], values, strict=False):
                if value is not None and t is not None:
                    scalar(f"monitor/{column}", value, step=round(t * 1000))
    writer.flush()
    writer.close()
    return folder
