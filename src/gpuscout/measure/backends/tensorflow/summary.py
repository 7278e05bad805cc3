"""TensorBoard event files, written with TensorFlow (for ``gpuscout.publish.to_tensorboard``).

The summaries are written with TensorFlow's core ``tf.summary.write`` and the scalars plugin's
metadata, which is what ``tf.summary.scalar`` does, so the ``tensorboard`` package (a web
server and its dependencies) is needed only to look at them, not to write them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gpuscout.measure.backends.tensorflow.runtime import import_tensorflow


def write_scalars(folder: Path, scalars: Iterable[tuple[str, float, int]]) -> None:
    """Write each ``(tag, value, step)`` as a scalar summary into an event file in ``folder``."""
    tf = import_tensorflow()
    tf.config.set_visible_devices([], "GPU")  # a few scalars: no reason to touch a GPU
    writer = tf.summary.create_file_writer(str(folder))
    plugin = tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars")
    metadata = tf.compat.v1.SummaryMetadata(plugin_data=plugin).SerializeToString()
    with writer.as_default():
        for tag, value, step in scalars:
            tf.summary.write(tag, tf.constant(float(value), tf.float32), step, metadata=metadata)
    writer.flush()
    writer.close()
