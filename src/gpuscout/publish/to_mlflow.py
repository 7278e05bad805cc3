"""A stored run as an MLflow run (``--mlflow``): its settings as parameters, its figures as
metrics, every step time and the monitor's series as metric histories, each value stamped
with the time it happened (``publish.series``).

MLflow is optional and not installed with gpuscout; where it is, the tracking server is
MLflow's own choice (``MLFLOW_TRACKING_URI``, else ./mlruns), as with any MLflow client.
"""

from __future__ import annotations

import warnings
from typing import Any

from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult
from gpuscout.publish.series import Scalar, run_scalars

BATCH = 1000
MAX_PARAM = 500  # MLflow refuses longer parameter values on some back ends


def _params(r: RunResult) -> dict[str, str]:
    values: dict[str, Any] = {
        "gpuscout_run_id": r.id, "workload": r.workload, "device": r.device,
        "precision": r.precision, "xla": r.xla, "loop": r.loop, "batch_size": r.batch_size,
        "replicas": r.replicas, "status": r.status, "backend": r.backend,
        "tensorflow": r.env.get("tensorflow"), "jax": r.env.get("jax"), "torch": r.env.get("torch"),
        "device_name": r.env.get("device_name"), "host": r.env.get("hostname"), "note": r.note,
    }  # fmt: skip
    return {k: str(v)[:MAX_PARAM] for k, v in values.items() if v is not None}


def _metrics(r: RunResult) -> dict[str, float]:
    return {k: float(v) for k, v in r.headline().items() if v is not None}


def _metric_name(s: Scalar) -> str:
    """MLflow's names for the series: ``step_time_s``, ``step_samples_per_second``,
    ``monitor.NAME`` (the headline figures are logged by name)."""
    return f"monitor.{s.name}" if s.group == "monitor" else f"{s.group}_{s.name}"


def log_mlflow(result: RunResult) -> str:
    """Log ``result`` as one MLflow run; return the MLflow run id."""
    try:
        import mlflow
        from mlflow.entities import Metric
    except ImportError:
        raise UserError(
            "--mlflow needs MLflow, which is not installed.", "pip install mlflow-skinny."
        ) from None
    with warnings.catch_warnings():  # MLflow's own deprecation chatter is not the user's
        warnings.simplefilter("ignore")
        with mlflow.start_run(run_name=f"gpuscout run {result.id}: {result.workload}") as run:
            mlflow.log_params(_params(result))
            history = [
                Metric(_metric_name(s), s.value, round(s.wall_time_s * 1000), s.step)
                for s in run_scalars(result)
                if s.group != "run"
            ]
            client = mlflow.MlflowClient()
            for start in range(0, len(history), BATCH):  # the tracking API's limit per call
                client.log_batch(run.info.run_id, metrics=history[start : start + BATCH])
            mlflow.log_metrics(_metrics(result))
            mlflow.set_tag("gpuscout.run_id", str(result.id))
        return str(run.info.run_id)
