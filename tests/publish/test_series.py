"""What TensorBoard and MLflow are handed for a stored run: every step's time and rate, the
run's headline figures and the monitor's series, each at the moment it happened (issue 43:
tests mirror the package; the sinks themselves are checked end to end in tests/cli)."""

from __future__ import annotations

from datetime import datetime

from gpuscout.publish.series import run_scalars
from tests.store.test_store import _result

END = datetime.fromisoformat("2026-12-02T12:00:00+00:00").timestamp()


def test_steps_end_at_the_runs_end_in_order() -> None:
    run = _result(0).model_copy(update={"step_times_s": [0.5, 0.25, 0.25], "batch_size": 32})
    steps = [s for s in run_scalars(run) if s.group == "step" and s.name == "time_s"]
    assert [s.value for s in steps] == [0.5, 0.25, 0.25]
    assert [s.wall_time_s - END for s in steps] == [-0.5, -0.25, 0.0]  # the last ends at the end
    rates = [s.value for s in run_scalars(run) if s.group == "step" and s.name != "time_s"]
    assert rates == [64.0, 128.0, 128.0]


def test_a_run_without_its_batch_publishes_no_rate_and_the_headline_at_its_end() -> None:
    run = _result(0).model_copy(update={"step_times_s": [0.1], "batch_size": 0})
    scalars = run_scalars(run)
    assert not [s for s in scalars if s.name == "samples_per_second" and s.group == "step"]
    headline = {s.name: s for s in scalars if s.group == "run"}
    assert headline and all(s.step == 0 and s.wall_time_s == END for s in headline.values())


def test_monitor_samples_keep_their_spacing_and_skip_gaps() -> None:
    timeline = {"t": [0.0, 1.5, None, 3.0], "gpu_util": [10.0, None, 50.0, 90.0]}
    run = _result(0).model_copy(update={"monitor_timeline": timeline})
    monitor = [s for s in run_scalars(run) if s.group == "monitor"]
    assert [(s.name, s.value, s.step, s.wall_time_s - END) for s in monitor] == [
        ("gpu_util", 10.0, 0, -3.0),
        ("gpu_util", 90.0, 3000, 0.0),
    ]
