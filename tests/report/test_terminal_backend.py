"""The terminal summary names the framework a run measured with (issue 19: JAX runs said
"TensorFlow None")."""

from __future__ import annotations

import io

from rich.console import Console

from gpuscout.core.records import StepTimes, Warmup
from gpuscout.report.terminal import print_result
from tests.report.runs import report_runs


def _software_line(env: dict[str, str]) -> str:
    run = report_runs()[0].model_copy(update={
        "env": env,
        "warmup": Warmup(steps=3, seconds=0.5, method="detected"),
        "step_time_s": StepTimes(median=0.01, p5=0.009, p95=0.012, mean=0.0102),
    })  # fmt: skip
    out = io.StringIO()
    print_result(run, Console(file=out, width=200))
    return next(line for line in out.getvalue().splitlines() if "software" in line)


def test_a_jax_run_names_jax_and_a_tensorflow_run_tensorflow() -> None:
    jax_line = _software_line({"jax": "0.10.2", "keras": "3.15.1", "python": "3.11.7"})
    assert "JAX 0.10.2 · Keras 3.15.1" in jax_line and "TensorFlow" not in jax_line
    tf_line = _software_line({"tensorflow": "2.21.0", "keras": "3.15.1", "python": "3.11.7"})
    assert "TensorFlow 2.21.0 · Keras 3.15.1" in tf_line and "JAX" not in tf_line
