"""``--tensorboard DIR`` checked before measuring, and the reader of TensorBoard's event files
that ``tests/cli/test_scout_cli.py`` uses to read a real run back (it publishes through the
same code as ``bench``, so one training serves both)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def tensorboard_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    import tensorflow as tf

    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for v in event.summary.value:
                if v.metadata.plugin_data.plugin_name == "scalars":
                    value = float(tf.make_ndarray(v.tensor))
                    out.setdefault(v.tag, []).append((event.step, value))
    return out


def test_unwritable_tensorboard_dir_fails_before_measuring(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = run_cli("bench", "--workload", "mlp", "--steps", "3", "-q", "--tensorboard",
                  str(blocker / "tb"), block_tf=True)  # fmt: skip
    assert res.code == 2 and "cannot write --tensorboard" in res.err
    assert len(res.err.strip().splitlines()) == 1
