"""The measurements a calibration is fitted to: published rows and your stored GPU runs.

Each becomes a :class:`Point`, a step profile on a catalog GPU at a measured speed, modelled at
its own batch. A row or run that cannot be one is said, never dropped silently
(:func:`user_rows_used`, :func:`run_points`). The fit itself is ``calibrate.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuscout.catalog import Catalog, Gpu, Published
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import Terms, terms
from gpuscout.records import FIT_PREFIX, RunResult

# Published workload -> the profile that models it: workload, dims, and the batch per GPU a row
# is modelled at when the source does not state its batch.
_SHAPES: dict[str, tuple[str, dict[str, int], int]] = {
    "resnet50": ("resnet50", {}, 256),
    "bert-base": ("bert-base", {}, 32),
    "bert-large": ("bert-large", {}, 32),
}
STORED = "your stored runs"  # the software stack of the user's own runs


@dataclass(frozen=True)
class Point:
    """One measurement to fit: a profile on a GPU at a measured speed (samples/s per GPU)."""

    gpu: Gpu
    profile: Profile
    measured: float
    source_id: str
    label: str
    workload: str = ""  # as the source names it (resnet50, bert-base, bert-large)
    measured_batch: int | None = None  # per GPU, as measured (None: the source does not say)
    origin: str = "built-in"  # the catalog file of the published row ("built-in": shipped)
    stack: str = ""  # the software stack: framework and version
    tf32: bool = True  # float32 matmuls on TF32 tensor cores (a stored --no-tf32 run: False)
    run_id: int | None = None  # the stored run it is (None: a published row)

    @property
    def modelled_batch(self) -> int:
        """Per GPU, as modelled: the profile's batch (the measured one where the source says)."""
        return self.profile.batch

    @property
    def group(self) -> tuple[str, str, str]:
        """Rows whose ratios mean something: one source, workload and precision."""
        return (self.source_id, self.profile.key.split("@")[0], self.profile.precision)


_TERMS: dict[tuple[str, str, str, bool], Terms] = {}


def point_terms(p: Point) -> Terms:
    key = (p.profile.key, p.gpu.model_dump_json(), p.stack, p.tf32)
    if key not in _TERMS:
        _TERMS[key] = terms(p.profile, p.gpu, p.tf32)
    return _TERMS[key]


def _stack(row: Published) -> str:
    return f"{row.framework} {row.software or '?'}".strip()


def published_points(catalog: Catalog) -> list[Point]:
    """The catalog's single-GPU published measurements that have a shipped profile (the same
    rows give the same points: kept for the process, as each takes a profile rescaled)."""
    key = (tuple(catalog.published), tuple(catalog.published_from),
           tuple(sorted(catalog.gpus.items())))  # fmt: skip
    if key not in _POINTS:
        _POINTS[key] = _published_points(catalog)
    return list(_POINTS[key])


_POINTS: dict[object, list[Point]] = {}


def _published_points(catalog: Catalog) -> list[Point]:
    points = []
    for index, row in enumerate(catalog.published):
        point = _point(catalog, row, catalog.published_origin(index))
        if point is not None:
            points.append(point)
    return points


def profile_for(workload: str, dims: dict[str, int], batch: int, precision: str) -> Profile | None:
    """A profile at this batch: shipped or cached; a shipped one at another batch is rescaled
    (``Profile.at_batch``), so each published row is modelled at its own batch."""
    return cached(workload, dims, batch, precision)


def _point(catalog: Catalog, row: Published, origin: str = "built-in") -> Point | None:
    if row.gpu_count != 1 or row.workload not in _SHAPES:
        return None
    workload, dims, default_batch = _SHAPES[row.workload]
    if row.seq_len:
        dims = {**dims, "seq_len": row.seq_len}
    batch = row.batch_size_per_gpu or default_batch
    profile = profile_for(workload, dims, batch, row.precision)
    if profile is None:
        return None
    label = f"{row.gpu} {row.workload} {row.precision} ({row.source_id})"
    gpu = catalog.gpus[row.gpu_id]
    return Point(gpu, profile, row.throughput, row.source_id, label, row.workload,
                 row.batch_size_per_gpu, origin, _stack(row))  # fmt: skip


def user_rows_used(catalog: Catalog, points: Sequence[Point]) -> list[str]:
    """One line per user catalog file whose rows this fit or its predictions use: the GPUs
    whose shipped rows it replaces or that it adds, and the published measurements it brings.

    A user's row moves every fitted factor (a TB/s-for-GB/s typo in one GPU row once moved the
    old model's efficiencies from 95/80/49 % to 35/67/100 %), so it never enters a calibration
    silently.
    """
    on_gpu: dict[str, int] = {}
    brought: dict[str, list[str]] = {}
    for p in points:
        on_gpu[p.gpu.id] = on_gpu.get(p.gpu.id, 0) + 1
        if p.origin != "built-in":
            brought.setdefault(p.origin, []).append(p.gpu.id)
    lines = []
    for path, ids in catalog.user_gpus().items():
        parts = []
        for gpu_id in sorted(ids):
            verb = "replaces the shipped row of" if gpu_id in catalog.overrides else "adds"
            used = on_gpu.get(gpu_id, 0)
            fit = f", under {used} measurement{'s' * (used != 1)} in the fit" if used else ""
            parts.append(f"{verb} {gpu_id}{fit}")
        lines.append(f"your catalog {path} {'; '.join(parts)}")
    for path, ids in brought.items():
        lines.append(
            f"your catalog {path} brings {len(ids)} published measurement"
            f"{'s' * (len(ids) != 1)} into the fit ({', '.join(sorted(set(ids)))})"
        )
    return lines


def run_points(runs: Sequence[RunResult], catalog: Catalog) -> tuple[list[Point], list[str]]:
    """The user's stored GPU runs that can be calibration points, and a note for each GPU run
    that cannot (grouped by reason), so a run left out is never left out silently.

    A point needs a catalog GPU, samples/s, one device, training, and the step profile of a
    built-in workload at that batch and precision, shipped or cached: never traced here, as
    computing one needs TensorFlow. CPU runs and inference runs are no points, and no news.
    """
    from gpuscout.run_settings import ran_with_tf32
    from gpuscout.workloads import WORKLOADS

    points: list[Point] = []
    left_out: dict[str, list[str]] = {}
    for run in runs:
        if run.status != "ok" or run.mode != "train" or not run.device.startswith("GPU"):
            continue
        device = str(run.env.get("device_name") or run.device)
        gpu = catalog.find_device(device)
        reason = None
        profile = None
        if gpu is None:
            reason = f"its GPU '{device}' is not in the catalog"
        elif run.samples_per_second is None:
            reason = "it measured steps/s only (ScoutCallback without batch_size), not samples/s"
        elif run.workload.startswith(FIT_PREFIX) or run.config.model:
            reason = "your own model: gpuscout keeps no step profile of it to model it with"
        elif run.workload not in WORKLOADS:
            reason = f"'{run.workload}' is not a built-in workload"
        elif run.replicas > 1:
            reason = f"it ran on {run.replicas} devices; calibration models one GPU"
        elif run.mfu is not None and run.mfu > 1:
            reason = f"its MFU is {run.mfu:.0%}, above 100 %: its peak or its figures are wrong"
        else:
            profile = profile_for(run.workload, run.config.dims, run.batch_size, run.precision)
            if profile is None:
                reason = (
                    f"no step profile of {run.workload} at batch {run.batch_size}, "
                    f"{run.precision} is at hand (gpuscout predict --workload {run.workload} "
                    f"--batch-size {run.batch_size} --precision {run.precision} traces one, "
                    "with TensorFlow, and keeps it)"
                )
        if reason is not None or gpu is None or profile is None or run.samples_per_second is None:
            left_out.setdefault(f"{run.workload}: {reason}", []).append(str(run.id))
            continue
        label = f"{gpu.id} {run.workload} {run.precision} (your run {run.id})"
        measured = run.samples_per_second.median
        tf32 = ran_with_tf32(run.env, run.config.tf32)
        points.append(Point(gpu, profile, measured, "stored", label, run.workload,
                            run.batch_size, stack=STORED, tf32=tf32, run_id=run.id))  # fmt: skip
    points = _screened(points, catalog, left_out)
    notes = [
        f"not in the calibration: your run{'s' if len(ids) > 1 else ''} {', '.join(ids)} ({why})"
        for why, ids in left_out.items()
    ]
    return points, notes


def screen_factor() -> float:
    """How far off the published rows' prediction a stored run may be and still be fitted to:
    twice the widest end of the model's widest band (a workload no published row validates,
    x1.5 today, so x3). A run further off than twice what a whole unseen source is off is a
    mistake (a wrong batch, a bogus import), not a software stack: fitted, one such run moved
    every prediction from its store by 18 %."""
    from gpuscout.predict.out_of_sample import shipped

    low, high = shipped().unvalidated
    return 2 * max(1 / low, high)


def _screened(points: list[Point], catalog: Catalog, left_out: dict[str, list[str]]) -> list[Point]:
    """The points within :func:`screen_factor` of the published rows' own fit; each other is
    added to ``left_out`` with its figures, so a run left out is named and why."""
    if not points:
        return points
    from gpuscout.predict.calibrate import calibration_for, modelled

    base = calibration_for(catalog)  # published rows (and your catalog files) alone
    limit = screen_factor()
    kept = []
    for p in points:
        predicted = modelled(base, p)
        ratio = p.measured / predicted
        if 1 / limit <= ratio <= limit:
            kept.append(p)
            continue
        why = (
            f"{p.workload}: it measured {p.measured:,.4g} samples/s where the published rows "
            f"alone predict {predicted:,.4g} on {p.gpu.id}, more than {limit:.1f}x off "
            "(twice the model's widest band): a wrong figure, not a measurement to fit"
        )
        left_out.setdefault(why, []).append(str(p.run_id))
    return kept
