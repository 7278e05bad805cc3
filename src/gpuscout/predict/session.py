"""One prediction entry for every command: the calibration built once, asked by all of them.

``predict``, ``calibrate``, ``advise``, ``cost``, ``scout``, ``report``, ``audit`` and
``ScoutCallback`` each used to predict with different inputs, so one question got two answers.
A :class:`Session` is made once per command by :func:`session`, from the catalog (your catalog
files included), the stored runs and the ``--stack`` level, and every prediction of the command
goes through it: one GPU or many (the fitted scaling model, ``scaling.py``), anchored on your
stored runs of the very step wherever there are some (``anchoring.py``; ``--from-run`` picks
one), with the lines to print about what it holds (:attr:`Session.notes`). Nothing else
calibrates: the published rows are fitted once (``calibrate.py``), your runs anchor.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscout.catalog import Catalog, Gpu
from gpuscout.core.articles import REFERENCE_GPU
from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult, impossible_value
from gpuscout.core.run_settings import ran_with_tf32
from gpuscout.predict import scaling
from gpuscout.predict.anchoring import Anchors, anchors_for, never_anchors, step_matches
from gpuscout.predict.calibrate import Calibration, calibration_for
from gpuscout.predict.calibration_points import user_rows_used
from gpuscout.predict.caveats import caveats
from gpuscout.predict.predictor import Prediction, predict
from gpuscout.predict.profile import Profile
from gpuscout.predict.stacks import StackLevel, stack_level
from gpuscout.predict.uncertainty import Band, band, range_note

if TYPE_CHECKING:
    from gpuscout.store import Store

Counts = Sequence[int | tuple[int, int]]
Measured = dict[tuple[str, int], float]


@dataclass(frozen=True)
class Session:
    """The calibration every prediction of a command uses, the stored runs that anchor it and
    the software stack it assumes where none does.

    Make one with :func:`session`; a test may build one from a calibration directly."""

    catalog: Catalog
    calibration: Calibration
    runs: tuple[RunResult, ...] = ()  # the successful stored GPU runs (newest first)
    left_out: tuple[str, ...] = field(default=())  # a line per stored run no use, why
    stack: str | None = None  # --stack (None: the level of the stack ``backend`` measures with)
    backend: str = "tensorflow"  # the command's --backend: the stack gpuscout measures with
    pinned: RunResult | None = None  # --from-run: the one run that anchors
    strict: bool = True  # a pinned run that cannot anchor is a user error (predict --from-run)
    # anchors already found, by the step (workload, dims, batch, precision, ...) and TF32
    _found: dict[tuple[object, ...], Anchors] = field(
        default_factory=dict, compare=False, repr=False
    )
    _measured: dict[tuple[object, ...], tuple[Measured, Measured]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def run_ids(self) -> tuple[int, ...]:
        """The ids of the stored GPU runs that may anchor a prediction of their own step."""
        runs = (self.pinned,) if self.pinned is not None else self.runs
        return tuple(
            r.id for r in runs if r.id is not None and never_anchors(r, self.catalog) is None
        )

    @property
    def notes(self) -> list[str]:
        """What every command prints beside its predictions: your catalog files' rows in the
        fit, and your stored GPU runs no prediction can use, with why."""
        return user_rows_used(self.catalog, self.calibration.points) + list(self.left_out)

    @property
    def reference(self) -> Gpu:
        """The GPU relative speeds are against unless a command names another."""
        return self.catalog.resolve(REFERENCE_GPU).gpu

    def level(self, profile: Profile) -> StackLevel:
        """The ``--stack`` level a prediction of ``profile`` assumes where no run anchors it
        (and its ratios between GPUs where one does): the one named, else the stack gpuscout
        measures with on the command's backend (a decoder's step is traced on JAX whatever
        the backend: the backend asked still decides)."""
        return stack_level(self.stack, self.backend)

    def anchors(self, profile: Profile, tf32: bool = True) -> Anchors:
        """Your stored runs of this very step, as anchors (``anchoring.py``)."""
        key = _step_key(profile, tf32)
        if key not in self._found:
            eff = self.calibration.efficiency_for(self.level(profile), profile.precision)
            found = anchors_for(
                profile, self.runs, self.catalog, eff, tf32, self.pinned, self.strict
            )
            self._found[key] = found
        return self._found[key]

    def band(self, profile: Profile, tf32: bool = True) -> Band:
        """The range a prediction of ``profile`` prints (anchored or not)."""
        anchored = self.anchors(profile, tf32).anchored
        return band(profile.workload, profile.kind, anchored=anchored)

    def caveats(self, profile: Profile, gpus: Sequence[Gpu] = ()) -> list[str]:
        """What a prediction of ``profile`` (on ``gpus``) cannot see, the same lines in every
        command (``predict.caveats``)."""
        return caveats(profile, gpus)

    def range_note(self, profile: Profile, tf32: bool = True) -> str:
        """The range in one line, for a command that prints times or prices without it."""
        return range_note(self.band(profile, tf32))

    def describe(self, profile: Profile, tf32: bool = True) -> str:
        """The fit, the stack and the anchors behind a prediction of ``profile``, and every
        stored run of the step that could not anchor it with why, one line: what a command
        that prints times or prices says beside them."""
        found = self.anchors(profile, tf32)
        level = self.level(profile)
        what = (
            f"{found.describe(profile.batch)}; the model's ratios are the {level.name} stack's"
            if found.anchored
            else f"software stack: {level.name} (--stack picks another)"
        )
        return "; ".join([self.calibration.describe(level), what, *found.notes])

    def predict(
        self,
        profile: Profile,
        gpus: Sequence[Gpu],
        counts: Counts = (1,),
        *,
        reference: Gpu | None = None,
        epoch_samples: int = 1,
        network_gbit: float = scaling.DEFAULT_NETWORK_GBIT,
        tf32: bool = True,
        sharded: bool = False,
        four_bit_base: bool = False,
        batch: int | None = None,
    ) -> tuple[list[Prediction], list[str]]:
        """:func:`gpuscout.predict.predictor.predict` with this session's calibration, stack
        and anchors, and what your stored runs measured of this very step beside each row. A
        count is a number of GPUs in one machine, or (machines, GPUs per machine).

        ``batch``: the batch per GPU to predict at (None: the profile's own): the step
        re-counted at it where the profile knows how it grows (``Profile.at_batch``), else
        estimated from its split (``predict.batch_size``), said in the notes; what your runs
        measured at the profile's batch is then not shown beside it."""
        if batch is not None and batch != profile.batch and profile.per_sample is not None:
            with contextlib.suppress(ValueError):  # a kernel with no work left: estimated
                profile, batch = profile.at_batch(batch), None
        if batch == profile.batch:
            batch = None
        measured, measured_scaling = self.measured(profile, tf32) if batch is None else ({}, {})
        return predict(
            profile,
            gpus,
            counts,
            self.catalog,
            reference or self.reference,
            epoch_samples,
            calibration=self.calibration,
            level=self.level(profile),
            anchors=self.anchors(profile, tf32),
            measured=measured,
            measured_scaling=measured_scaling,
            network_gbit=network_gbit,
            tf32=tf32,
            sharded=sharded,
            four_bit_base=four_bit_base,
            batch=batch,
        )

    def option(
        self, profile: Profile, gpu: Gpu, count: int = 1, tf32: bool = True,
        layout: tuple[int, int] | None = None,
        network_gbit: float = scaling.DEFAULT_NETWORK_GBIT, batch: int | None = None,
    ) -> Prediction:  # fmt: skip
        """``count`` of one GPU, as an option to buy or rent: laid out as ``layout``
        (machines, GPUs per machine: a rental's instances, ``price.instances``), else in as
        few machines as its form factor allows (16 SXM GPUs: 2 machines of 8, over the
        network), as ``advise`` ranks them and ``cost`` prices them. Its scaling efficiency
        is the fitted scaling model's; ``batch``: per GPU, where not the profile's own (the
        share of a global batch an option's GPUs split, ``predict.batch_plan``)."""
        how = layout or scaling.machines_for(gpu, count)
        rows, _ = self.predict(profile, [gpu], [how], tf32=tf32, network_gbit=network_gbit,
                               batch=batch)  # fmt: skip
        return rows[0]

    def measured(self, profile: Profile, tf32: bool = True) -> tuple[Measured, Measured]:
        """Medians of what stored runs of this very profile measured, per (catalog GPU, count
        in one machine): samples/s, and the scaling efficiency of ``bench --scaling`` runs. In
        fp32, only runs with the prediction's TF32 setting: the other one measured other
        matmuls. A forward pass (``--mode inference``) has no training run to compare with."""
        if profile.kind == "forward":
            return {}, {}
        key = _step_key(profile, tf32)
        if key not in self._measured:
            self._measured[key] = self._measure(profile, tf32)
        return self._measured[key]

    def _measure(self, profile: Profile, tf32: bool) -> tuple[Measured, Measured]:
        speeds: dict[tuple[str, int], list[float]] = {}
        scaled: dict[tuple[str, int], list[float]] = {}
        for run in self.runs:
            same = step_matches(run, profile) is None and run.per_replica_batch == profile.batch
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


def _step_key(profile: Profile, tf32: bool) -> tuple[object, ...]:
    """A step as the session's caches know it (``Profile.key`` needs a registered workload,
    which a ScoutCallback step is not)."""
    return (profile.workload, *sorted(profile.dims.items()), profile.batch, profile.precision,
            profile.kind, profile.backend, tf32)  # fmt: skip


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
    stack: str | None = None,
    from_run: int | None = None,
    strict: bool = True,
    backend: str = "tensorflow",
) -> Session:
    """The session a command predicts with: the calibration fitted once to the catalog's
    published rows (and your catalog files' rows), your stored GPU runs as anchors, and the
    ``--stack`` level (None: the stack gpuscout measures with).

    ``store``: an open store or a database, as :func:`stored_runs` reads it. ``runs``: these
    runs instead of the store's (a report on runs handed to it, a test). ``from_run``: the
    stored run that alone anchors (``--from-run``), whatever its device or status: ``strict``
    (``predict``), a run that cannot anchor a prediction is a user error, naming why; not
    strict (a job command, where the run is also the job's set-up), it is said and the other
    stored runs anchor."""
    found = stored_runs(store) if runs is None else list(runs)
    usable: list[RunResult] = []
    bad: list[str] = []
    for run in found:
        if run.status != "ok" or not _on_gpu(run.device):
            continue
        wrong = impossible_value(run)
        never = never_anchors(run, catalog)
        if wrong is not None:  # a value no measurement gives (an older import let it in)
            bad.append(f"not an anchor: your run {run.id} (field '{wrong[0]}': {wrong[1]})")
        elif never is not None and run.mode == "train":
            bad.append(f"not an anchor: your run {run.id} ({never})")
            usable.append(run)  # still shown as measured where it can be
        else:
            usable.append(run)
    pinned = None
    if from_run is not None:
        pinned = _stored_run(store, from_run)
        wrong = impossible_value(pinned)
        if wrong is not None:
            raise UserError(
                f"run {from_run} cannot anchor a prediction: its field '{wrong[0]}' holds "
                f"{wrong[1]}, which no measurement gives.",
                "pick another run ('gpuscout runs list'), or drop --from-run.",
            )
    stack_level(stack)  # an unknown --stack is one line now, not at the first prediction
    return Session(
        catalog, calibration_for(catalog), tuple(usable), tuple(bad), stack, backend, pinned,
        strict,
    )  # fmt: skip


def _stored_run(store: Store | str | Path | None, run_id: int) -> RunResult:
    """One stored run by id (a user error where there is no such run)."""
    from gpuscout.store import Store

    if isinstance(store, Store):
        return store.get(run_id)
    with Store(store, readonly=True) as opened:
        return opened.get(run_id)


__all__ = ["Session", "session", "stored_runs"]
