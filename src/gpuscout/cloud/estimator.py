"""gpuscout's predicted job time as SkyPilot's time estimator (``Task.set_time_estimator``).

SkyPilot's optimizer ranks the resources a task could run on by cost, and assumes a 1-hour job
unless the task has a time estimator: a function from a ``sky.Resources`` to seconds. Handing
it gpuscout's prediction lets ``sky launch`` choose a GPU by what the job would cost there::

    import sky
    from gpuscout.cloud import time_estimator
    from gpuscout.predict.job import JobSpec

    task = sky.Task.from_yaml("train.yaml")  # accelerators: {H100:8, A100-80GB:8, L40S:8}
    task.set_time_estimator(time_estimator(JobSpec(workload="resnet50", epochs=90)))

The job is resolved and the calibration built once, when the estimator is made; each call
maps the resources' accelerator name (at their cloud, where names differ) and count to a
catalog GPU and predicts the whole job's seconds on ``nodes`` machines of that many GPUs.

Resources gpuscout cannot predict (no accelerator, a name no catalog GPU answers to, a
fractional GPU, more GPUs than one machine holds) raise a ``UserError`` naming them, unless a
``fallback_seconds`` is given, which is then returned for them: a silent made-up time would
steer the optimizer as surely as a real one. SkyPilot's own default is 3,600 s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuscout.catalog import Catalog
from gpuscout.cloud.names import catalog_id
from gpuscout.core.errors import UserError
from gpuscout.predict.job import Job, JobSpec, resolve_job
from gpuscout.predict.scaling import max_per_machine
from gpuscout.predict.session import Session


@dataclass
class TimeEstimator:
    """Callable as SkyPilot's time estimator: ``estimator(resources) -> seconds``."""

    job: Job
    model: Session
    nodes: int = 1
    fallback_seconds: int | None = None
    _cache: dict[tuple[str, int], int] = field(default_factory=dict)

    def __call__(self, resources: Any) -> int:
        """Seconds of the whole job on ``resources`` (anything with ``.accelerators``, a
        ``{name: count}`` mapping, and ``.cloud``, as ``sky.Resources`` has)."""
        accelerators = getattr(resources, "accelerators", None)
        if not isinstance(accelerators, Mapping) or len(accelerators) != 1:
            return self._unknown(f"resources {resources!r} name no single accelerator")
        (name, count), = accelerators.items()  # fmt: skip
        cloud = getattr(resources, "cloud", None)
        return self.seconds(str(name), count, None if cloud is None else str(cloud))

    def seconds(self, name: str, count: float, cloud: str | None = None) -> int:
        """Seconds of the whole job on ``nodes`` x ``count`` of SkyPilot's ``name``."""
        gpu_id = catalog_id(name, self.model.catalog, cloud)
        if gpu_id is None:
            return self._unknown(f"SkyPilot's accelerator '{name}' is no catalog GPU")
        if count != int(count) or count < 1:
            return self._unknown(f"{name}:{count:g} is not a whole number of GPUs")
        key = (gpu_id, int(count))
        if key not in self._cache:
            gpu = self.model.catalog.gpus[gpu_id]
            most, why = max_per_machine(gpu)  # what 'cloud plan' allows one machine
            if count > most:
                return self._unknown(f"{name}:{count:g}: one {gpu_id} machine holds at most "
                                     f"{most} ({why})")  # fmt: skip
            try:
                rows, _ = self.model.predict(self.job.profile, [gpu], [(self.nodes, int(count))])
            except UserError as exc:  # more GPUs than one machine holds
                return self._unknown(f"{name}:{count:g}: {exc.problem}")
            self._cache[key] = math.ceil(self.job.samples / rows[0].samples_per_second)
        return self._cache[key]

    def _unknown(self, why: str) -> int:
        if self.fallback_seconds is None:
            raise UserError(
                f"gpuscout cannot predict the job here: {why}.",
                "ask for a catalog GPU, or give time_estimator(..., fallback_seconds=3600).",
            )
        return self.fallback_seconds


def time_estimator(
    spec: JobSpec,
    *,
    nodes: int = 1,
    catalog: Catalog | None = None,
    store: Any = None,
    fallback_seconds: int | None = None,
    stack: str | None = None,
) -> TimeEstimator:
    """SkyPilot's time estimator for the job ``spec`` names, predicted as ``gpuscout predict``
    and ``cost`` predict it (the same session: your catalog files and stored GPU runs count).

    ``nodes``: the task's ``num_nodes``. ``store``: the results database (None: GPUSCOUT_DB or
    the user data dir). ``fallback_seconds``: returned for resources gpuscout cannot predict;
    None (the default) raises a ``UserError`` for them instead. ``stack``: the ``--stack``
    level; the job's stored run (``spec.run``, ``--from-run``) is its one anchor, as in
    ``cost``."""
    from gpuscout.catalog import load_catalog
    from gpuscout.predict.session import session

    catalog = catalog or load_catalog()
    job = resolve_job(spec, catalog)
    model = session(catalog, store, stack=stack, from_run=spec.run.id if spec.run else None,
                    strict=False, backend=spec.backend)  # fmt: skip
    return TimeEstimator(job, model, nodes, fallback_seconds)


__all__ = ["TimeEstimator", "time_estimator"]
