"""Real input pipelines, each buildable with or without the fixes ``doctor`` tries.

Three kinds: the built-in workloads' generated data held in memory (fed to ``model.fit`` as
article 000's example does; see gpuscout.core.articles), the deliberately slow
``input-bound-demo`` pipeline, and the user's ``--data`` function. A fix goes where it belongs
in the pipeline when gpuscout builds it (``cache`` after the deterministic preprocessing,
before shuffling). A user's function that
takes the keyword arguments ``prefetch``, ``parallel`` or ``cache`` gets them and applies them
itself; for the others gpuscout applies them from outside and says how.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuscout.measure.pipelines import (
    KNOBS,
    Knobs,
    Pipeline,
    check_demo_batch,
    demo_note,
    demo_preprocess,
    in_memory_samples,
)
from gpuscout.measure.synthetic import arrays
from gpuscout.workloads import Dims, Workload

__all__ = ["Knobs", "Pipeline", "builtin", "generated", "user"]


def builtin(
    tf: Any, workload: Workload, dims: Dims, batch: int, knobs: Knobs, seed: int
) -> Pipeline:
    """The pipeline of a built-in workload: its own, or generated arrays held in memory."""
    if workload.has_pipeline:
        check_demo_batch(workload, dims, batch)
        return _slow_demo(tf, workload, dims, batch, knobs, seed)
    x, y = arrays(workload, dims, in_memory_samples(workload, dims, batch), seed)
    return _in_memory(tf, x, y, batch, knobs, seed)


def generated(tf: Any, built: Any, batch: int, knobs: Knobs, seed: int) -> Pipeline:
    """For a user's model without ``--data``: random samples shaped like its inputs."""
    from gpuscout.measure.backends.keras.user_model import synthetic_user_batch

    rng = np.random.default_rng(seed)
    x, y, notes = synthetic_user_batch(built.model, built.loss, 16 * batch, rng)
    pipe = _in_memory(tf, x[0] if len(x) == 1 else x, y, batch, knobs, seed)
    pipe.notes += notes
    return pipe


def _in_memory(tf: Any, x: Any, y: Any, batch: int, knobs: Knobs, seed: int) -> Pipeline:
    n = len(y)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if knobs.cache:
        ds = ds.cache()
    ds = ds.shuffle(min(n, 10_000), seed=seed).batch(batch, drop_remainder=True).repeat()
    if knobs.prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    note = (
        f"data: {n:,} generated samples held in memory, shuffled and batched with tf.data "
        "(from_tensor_slices), as model.fit feeds NumPy arrays"
    )
    return Pipeline(ds, batch, [note], has_map=False, finite=True, steps_per_epoch=n // batch)


def _slow_demo(
    tf: Any, workload: Workload, dims: Dims, batch: int, knobs: Knobs, seed: int
) -> Pipeline:
    """Per-sample Python preprocessing, as decoding and augmenting records in Python is."""
    n, inputs, work = dims["samples"], dims["inputs"], dims["work"]
    x, y = arrays(workload, dims, n, seed)

    def preprocess(sample: np.ndarray) -> np.ndarray:  # runs in Python, one sample at a time
        return demo_preprocess(sample, work)

    def mapped(sample: Any, label: Any) -> tuple[Any, Any]:
        out = tf.numpy_function(preprocess, [sample], tf.float32, stateful=False)
        return tf.ensure_shape(out, [inputs]), label

    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if not knobs.cache:  # shuffle the raw samples, cheap, so preprocessing runs at a steady rate
        ds = ds.shuffle(n, seed=seed)
    if knobs.parallel:
        ds = ds.map(mapped, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
    else:
        ds = ds.map(mapped)
    if knobs.cache:  # cache the preprocessed samples, then shuffle them anew each epoch
        ds = ds.cache().shuffle(n, seed=seed)
    ds = ds.batch(batch, drop_remainder=True).repeat()
    if knobs.prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    note = demo_note(n, work, "tf.numpy_function")
    return Pipeline(ds, batch, [note], has_map=True, finite=True, steps_per_epoch=n // batch)


def user(tf: Any, data_spec: str, knobs: Knobs, batch: int | None) -> Pipeline:
    """The user's ``--data`` function's dataset with ``knobs`` applied, and its batch size."""
    from gpuscout.measure import user_code
    from gpuscout.measure.user_spec import parse_function_spec

    spec = parse_function_spec(data_spec, "--data")
    takes = user_code.accepted_keywords(spec, "--data", KNOBS)
    ds = user_code.call_function(spec, "--data", **{k: getattr(knobs, k) for k in KNOBS})
    if not isinstance(ds, tf.data.Dataset):
        from gpuscout.core.errors import UserError

        raise UserError(
            f"--data '{data_spec}' returned {type(ds).__name__}, not a tf.data.Dataset.",
            "return a batched tf.data.Dataset of (inputs, labels).",
        )
    notes = [
        f"data from {data_spec}" + (f", which applies {sorted(takes)} itself" if takes else "")
    ]
    if batch is not None:
        ds = ds.unbatch().batch(batch, drop_remainder=True)
    cardinality = int(ds.cardinality())
    finite = cardinality != int(tf.data.INFINITE_CARDINALITY)
    epoch = cardinality if cardinality > 0 else None
    if knobs.cache and "cache" not in takes and finite:
        ds = ds.cache()
        notes.append("cache applied by gpuscout to your finished dataset (after all its steps)")
    if knobs.parallel and "parallel" not in takes:
        options = tf.data.Options()
        options.experimental_optimization.map_parallelization = True
        options.deterministic = False
        ds = ds.with_options(options)
        notes.append(
            "parallel map applied by gpuscout as tf.data's map_parallelization rewrite "
            "(it parallelises only stateless map functions)"
        )
    ds = ds.repeat() if finite else ds
    if knobs.prefetch and "prefetch" not in takes:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    first = next(iter(ds))[0]
    first = first[0] if isinstance(first, tuple | list) else first
    infinite = None if finite else "the dataset is infinite: nothing to cache"
    return Pipeline(ds, int(first.shape[0]), notes, True, finite, epoch, infinite)
