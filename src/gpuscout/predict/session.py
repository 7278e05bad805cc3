"""One prediction entry for every command: the calibration built once, asked by all of them.

``predict``, ``calibrate``, ``advise``, ``cost``, ``scout`` and ``report`` each used to fit the
model with different inputs (some with your stored GPU runs, some without), so one question got
two answers: with one A100 ResNet-50 run stored, ``predict`` said 2,490 images/s on an A100 and
``advise`` 1,520. A :class:`Session` is made once per command by :func:`session`, from the
catalog (your catalog files included) and the stored runs, and every prediction of the command
goes through it: one GPU or many (the fitted scaling model, ``scaling.py``), with the lines to
print about what the fit holds (:attr:`Session.notes`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscout.articles import REFERENCE_GPU
from gpuscout.catalog import Catalog, Gpu
from gpuscout.predict import scaling
from gpuscout.predict.calibrate import Calibration, calibration_for
from gpuscout.predict.calibration_points import run_points, user_rows_used
from gpuscout.predict.predictor import Anchor, Prediction, predict
from gpuscout.predict.profile import Profile
from gpuscout.records import RunResult, impossible_value
from gpuscout.run_settings import ran_with_tf32

if TYPE_CHECKING:
    from gpuscout.store import Store

Counts = Sequence[int | tuple[int, int]]
Measured = dict[tuple[str, int], float]


@dataclass(frozen=True)
class Session:
    """The calibration every prediction of a command uses, and the stored runs it came from.

    Make one with :func:`session`; a test may build one from a calibration directly."""

    catalog: Catalog
    calibration: Calibration
    runs: tuple[RunResult, ...] = ()  # the successful stored GPU runs it was built from
    left_out: tuple[str, ...] = field(default=())  # a line per stored run not in the fit, why

    @property
    def run_ids(self) -> tuple[int, ...]:
        """The ids of your stored runs in the calibration, in the order they were read."""
        return tuple(p.run_id for p in self.calibration.points if p.run_id is not None)

    @property
    def notes(self) -> list[str]:
        """What every command prints beside its predictions: your catalog files' rows in the
        fit, your stored runs in it (with their ids) and those left out of it, with why."""
        lines = user_rows_used(self.catalog, self.calibration.points)
        ids = self.run_ids
        if ids:
            shown = ", ".join(map(str, ids[:10])) + (", ..." if len(ids) > 10 else "")
            many = len(ids) != 1
            lines.append(
                f"calibrated with your {len(ids)} stored GPU run{'s' * many} "
                f"(id{'s' * many} {shown}) beside the published measurements"
            )
        return lines + list(self.left_out)

    @property
    def reference(self) -> Gpu:
        """The GPU relative speeds are against unless a command names another."""
        return self.catalog.resolve(REFERENCE_GPU).gpu

    def predict(
        self,
        profile: Profile,
        gpus: Sequence[Gpu],
        counts: Counts = (1,),
        *,
        reference: Gpu | None = None,
        epoch_samples: int = 1,
        anchor: Anchor | None = None,
        network_gbit: float = scaling.DEFAULT_NETWORK_GBIT,
        tf32: bool = True,
    ) -> tuple[list[Prediction], list[str]]:
        """:func:`gpuscout.predict.predictor.predict` with this session's calibration, and
        what your stored runs measured of this very step beside each row. A count is a number
        of GPUs in one machine, or (machines, GPUs per machine)."""
        measured, measured_scaling = self.measured(profile, tf32)
        return predict(
            profile,
            gpus,
            counts,
            self.catalog,
            reference or self.reference,
            epoch_samples,
            anchor=anchor,
            measured=measured,
            measured_scaling=measured_scaling,
            calibration=self.calibration,
            network_gbit=network_gbit,
            tf32=tf32,
        )

    def option(self, profile: Profile, gpu: Gpu, count: int = 1, tf32: bool = True) -> Prediction:
        """``count`` of one GPU, as an option to buy or rent: in as few machines as its form
        factor allows (16 SXM GPUs: 2 machines of 8, over the network), as ``advise`` ranks
        them and ``cost`` prices them. Its scaling efficiency is the fitted scaling model's."""
        rows, _ = self.predict(profile, [gpu], [scaling.machines_for(gpu, count)], tf32=tf32)
        return rows[0]

    def measured(self, profile: Profile, tf32: bool = True) -> tuple[Measured, Measured]:
        """Medians of what stored runs of this very profile measured, per (catalog GPU, count
        in one machine): samples/s, and the scaling efficiency of ``bench --scaling`` runs. In
        fp32, only runs with the prediction's TF32 setting: the other one measured other
        matmuls. A forward pass (``--mode inference``) has no training run to compare with."""
        if profile.kind == "forward":
            return {}, {}
        speeds: dict[tuple[str, int], list[float]] = {}
        scaled: dict[tuple[str, int], list[float]] = {}
        for run in self.runs:
            same = (run.workload, run.precision, run.per_replica_batch) == (
                profile.workload, profile.precision, profile.batch
            )  # fmt: skip
            gpu = self.catalog.find_device(str(run.env.get("device_name") or ""))
            spread = run.distribution
            if profile.precision == "fp32" and ran_with_tf32(run.env, run.config.tf32) != tf32:
                continue
            if not same or gpu is None or run.samples_per_second is None or run.mode != "train":
                continue
            if spread is not None and (spread.workers > 1 or spread.logical_devices):
                continue  # several machines, or CPU devices: not a count of GPUs in one machine
            key = (gpu.id, run.replicas)
            speeds.setdefault(key, []).append(run.samples_per_second.median)
            efficiency = spread.scaling.efficiency if spread and spread.scaling else None
            if efficiency and spread and spread.scaling and spread.scaling.base_replicas == 1:
                scaled.setdefault(key, []).append(efficiency.median)  # against 1 GPU, as predicted
        return (
            {k: statistics.median(v) for k, v in speeds.items()},
            {k: statistics.median(v) for k, v in scaled.items()},
        )


def _on_gpu(device: str) -> bool:
    """A run on GPUs: the only kind a calibration point or a measured value comes from."""
    return device.startswith("GPU")


def stored_runs(store: Store | str | Path | None = None) -> list[RunResult]:
    """Every successful stored GPU run, in full, newest first: what calibrates and what is
    shown as measured. ``store``: an open store, or a database (None: GPUSCOUT_DB or the user
    data dir); no database there is no runs. Other runs are read from the list columns only,
    so a store of thousands of CPU runs loads none of them."""
    from gpuscout.store import Store, database_exists

    if isinstance(store, Store):
        return _gpu_runs(store)
    if not database_exists(store):  # nothing measured yet: predict from the catalog alone
        return []
    with Store(store, readonly=True) as opened:
        return _gpu_runs(opened)


def _gpu_runs(store: Store) -> list[RunResult]:
    return store.load([r.id for r in store.list() if r.status == "ok" and _on_gpu(r.device)])


def session(
    catalog: Catalog,
    store: Store | str | Path | None = None,
    *,
    runs: Sequence[RunResult] | None = None,
) -> Session:
    """The session a command predicts with: the calibration fitted once to the catalog's
    published rows, your catalog files' rows and your stored GPU runs (the shipped fit when
    there are none of yours; a fit of about a second otherwise).

    ``store``: an open store or a database, as :func:`stored_runs` reads it. ``runs``: these
    runs instead of the store's (a report on runs handed to it, a test)."""
    found = stored_runs(store) if runs is None else list(runs)
    usable: list[RunResult] = []
    bad: list[str] = []
    for run in found:
        if run.status != "ok" or not _on_gpu(run.device):
            continue
        wrong = impossible_value(run)
        if wrong is None:
            usable.append(run)
        else:  # a value no measurement gives (an older import let it in): not fitted to
            bad.append(
                f"not in the calibration: your run {run.id} (field '{wrong[0]}': {wrong[1]})"
            )
    mine, left_out = run_points(usable, catalog)
    return Session(catalog, calibration_for(catalog, mine), tuple(usable), (*left_out, *bad))


__all__ = ["Session", "session", "stored_runs"]
