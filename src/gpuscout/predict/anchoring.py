"""Your measured GPU runs as anchors: the one way a stored run moves a prediction.

A stored GPU run of the very step a prediction is for (the same built-in workload and shape, or
the same ``--model``, in the same precision, training on one GPU) measured what the model can
only estimate: the speed of that step on that GPU, in your software stack. So that GPU gets the
measurement (its 95 % interval as the range), and every other GPU gets it times the model's
ratio between the two GPUs, with the band of chips left out of the fit (``uncertainty.py``):
the run fixes the stack, and only the ratio is predicted. A run at another batch is modelled at
its own batch, so the ratio also carries the batch's effect (the measured GPU itself then shows
the model's ratio too, not the measurement).

Several runs on one GPU: the median of their medians, the range from the lowest low to the
highest high. Runs on several GPUs: each measured GPU is scaled by its own measured/modelled
ratio; every other GPU by their geometric mean, as no one run is more right than another.
Before this, runs entered the calibration as one point among 143 and their stack factor landed
on its bound: one A100 run at 2,500 images/s was predicted 1,390 on that very A100.

A run the published rows' model misses by more than :func:`uncertainty.screen_factor` (twice the
widest band's far end, about x3.3 today) is not an anchor: a wrong figure (a bogus import, a
mislabelled batch) is no measurement to scale every GPU by. It is named, with its figures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuscout.catalog import Catalog, Gpu
from gpuscout.core.errors import UserError
from gpuscout.core.records import FIT_PREFIX, RunResult
from gpuscout.core.run_settings import ran_with_tf32
from gpuscout.predict.efficiency import Efficiency
from gpuscout.predict.predictor import runs_said
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import step_time
from gpuscout.predict.uncertainty import screen_factor, widest_chip_band


@dataclass(frozen=True)
class Measured:
    """One GPU's anchor: what its runs measured of the step, and its ratio to the model."""

    gpu: Gpu
    median: float  # samples/s at ``batch``: the median of the runs' medians
    low: float  # the lowest of the runs' 95 % interval bounds
    high: float
    batch: int  # per GPU, as measured
    scale: float  # measured / modelled, on this GPU at that batch
    run_ids: tuple[int, ...]


@dataclass(frozen=True)
class Anchors:
    """The measured GPUs a prediction is anchored on (none: it is not), and a line for each
    stored run of the step that could not be one, with why."""

    on: dict[str, Measured] = field(default_factory=dict)  # by catalog GPU id
    notes: tuple[str, ...] = field(default=())

    @property
    def anchored(self) -> bool:
        return bool(self.on)

    @property
    def scale(self) -> float:
        """What a GPU nobody measured is scaled by: the geometric mean of the measured GPUs'
        measured/modelled ratios."""
        return math.exp(statistics.fmean(math.log(m.scale) for m in self.on.values()))

    def scale_for(self, gpu_id: str) -> float:
        if not self.on:
            return 1.0
        measured = self.on.get(gpu_id)
        return measured.scale if measured else self.scale

    @property
    def run_ids(self) -> tuple[int, ...]:
        return tuple(sorted(i for m in self.on.values() for i in m.run_ids))

    def describe(self, batch: int | None = None) -> str:
        """Which runs anchor, what they measured, and how they are combined, for a prediction
        at ``batch`` per GPU (a measured GPU shows its measurement only at its runs' batch)."""
        parts = [
            f"{m.gpu.id}: {m.median:,.4g}/s at batch {m.batch} ({runs_said(m.run_ids)}"
            f"{', the median of their medians' if len(m.run_ids) > 1 else ''}; "
            f"x{m.scale:.2f} the model)"
            for m in self.on.values()
        ]
        how = (
            "every other GPU = that measurement x the model's ratio between the two GPUs"
            if len(self.on) == 1
            else "each measured GPU is scaled by its own ratio to the model, every other GPU "
            f"by their geometric mean (x{self.scale:.2f})"
        )
        same = [m for m in self.on.values() if m.batch == batch]
        if same:
            how += (
                "; a measured GPU's range is its runs' 95 % interval"
                if all(m.low < m.high for m in same)
                else "; a measured GPU's range is its runs' 95 % interval, where one was "
                "measured (too few steps for one: the measurement alone)"
            )
        if any(m.batch != batch for m in self.on.values()) and batch is not None:
            how += f"; a GPU measured at another batch is modelled at batch {batch} from it"
        spread = self.disagreement()
        if spread is not None:
            how += (
                f"; the measured GPUs' ratios to the model differ by x{spread:.2f}, more than "
                "the chips' band: the model's ratio between those GPUs is off for your stack, "
                "so the others' figures are less sure than their range says"
            )
        return f"anchored on {runs_said(self.run_ids, stored=True)}: {'; '.join(parts)}; {how}"

    def disagreement(self) -> float | None:
        """How far apart the measured GPUs' measured/modelled ratios are (largest over
        smallest), where that is more than the widest chip-relative band allows; else None."""
        if len(self.on) < 2:
            return None
        ratios = [m.scale for m in self.on.values()]
        spread = max(ratios) / min(ratios)
        low, high = widest_chip_band()
        return spread if spread > high / low else None


def step_matches(run: RunResult, profile: Profile) -> str | None:
    """Why ``run`` did not measure ``profile``'s step (None: it did, at its own batch). The
    same built-in workload and shape, or the same model file and function; the same precision;
    training."""
    if run.mode != "train" or profile.kind != "train":
        return "it measured inference, not a training step"
    if run.workload.startswith(FIT_PREFIX) or profile.workload.startswith(FIT_PREFIX):
        if run.workload != profile.workload:  # ScoutCallback anchors on its own run alone
            return "it was timed inside model.fit, and its model is not known to the store"
    elif profile.workload.startswith("model:"):
        spec = profile.workload[len("model:") : profile.workload.rfind(":")]
        if run.config.model != spec:
            return f"it measured {run.config.model or run.workload}, not your model {spec}"
        changed = _model_changed(run, spec)
        if changed:
            return changed
    else:
        if run.config.model or run.workload != profile.workload:
            return f"it measured {run.config.model or run.workload}, not {profile.workload}"
        from gpuscout.workloads import get_workload

        if get_workload(run.workload).resolve(run.config.dims) != profile.dims:
            return f"it measured {run.workload} at {run.config.dims}, not {profile.dims}"
    if run.precision != profile.precision:
        return f"it measured {run.precision}, not {profile.precision}"
    return None


def _model_changed(run: RunResult, spec: str) -> str | None:
    """Why the model file ``spec`` names now is not what ``run`` measured (None: it is, or the
    run is from before runs stored the file's hash). The run keeps the hash of its file and
    spec (``env['workload_hash']``, as the backends compute it); the same spec in another
    folder, or an edited file, is another model."""
    from gpuscout.measure.environment import hash_parts
    from gpuscout.measure.user_spec import parse_model_spec

    measured = run.env.get("workload_hash")
    if not measured:
        return None
    try:
        now = hash_parts(parse_model_spec(spec, check=False).path.read_bytes(), spec)
    except (UserError, OSError):
        return f"its model file {spec} cannot be read here to check it is the one measured"
    if now != measured:
        return f"{spec} has changed since it was measured (or is another file of that name)"
    return None


def _run_profile(run: RunResult, profile: Profile) -> Profile | None:
    """The step at the run's own batch: the profile itself, or a built-in workload's rescaled
    (shipped or cached; never traced here)."""
    if run.per_replica_batch == profile.batch:
        return profile
    if profile.workload.startswith(FIT_PREFIX):
        return None  # the callback's step is traced at its own batch alone
    # a built-in workload's shipped profile is rescaled; your model's, found if traced once at
    # that batch (its name holds the file's hash)
    return cached(profile.workload, profile.dims, run.per_replica_batch, profile.precision,
                  backend=profile.backend)  # fmt: skip


def _unusable(run: RunResult, catalog: Catalog) -> str | None:
    """Why a run's speed is no one GPU's measured samples/s, whatever step it is of (None: it
    is one): ``never_anchors`` and ``_why_not`` both ask."""
    device = str(run.env.get("device_name") or run.device)
    spread = run.distribution
    several = spread is not None and (spread.workers > 1 or bool(spread.logical_devices))
    if catalog.find_device(device) is None:
        return f"its GPU '{device}' is not in the catalog"
    if run.samples_per_second is None:
        return "it measured steps/s only (no batch size given), not samples/s"
    if run.mfu is not None and run.mfu > 1:
        return f"its MFU is {run.mfu:.0%}, above 100 %: its peak or its figures are wrong"
    if run.replicas > 1 or several:
        return f"it ran data parallel on {run.replicas} replicas; an anchor is one GPU's speed"
    return None


def _why_not(
    run: RunResult, profile: Profile, catalog: Catalog, tf32: bool
) -> tuple[str | None, Gpu | None, Profile | None]:
    """Why ``run`` cannot anchor ``profile`` (None: it can), its GPU and its step's profile."""
    gpu = catalog.find_device(str(run.env.get("device_name") or run.device))
    reason = step_matches(run, profile)
    at = None
    if run.status != "ok":
        reason = f"it did not succeed (status {run.status})"
    elif reason is not None:
        pass
    elif (unusable := _unusable(run, catalog)) is not None or gpu is None:
        reason = unusable
    elif (
        profile.precision == "fp32"
        and gpu.tf32_tensor_tflops  # without TF32 units the switch changes nothing
        and (ran := ran_with_tf32(run.env, run.config.tf32)) != tf32
    ):
        reason = (
            f"it ran with TF32 {'on' if ran else 'off'}, this prediction has it "
            f"{'on' if tf32 else 'off'} ({'add' if tf32 else 'drop'} --no-tf32 to match)"
        )
    elif (at := _run_profile(run, profile)) is None:
        reason = (
            f"it measured batch {run.per_replica_batch}, this prediction is at {profile.batch}, "
            f"and no step profile at batch {run.per_replica_batch} is at hand (predict it "
            f"with --batch-size {run.per_replica_batch} once, which traces and keeps one, or "
            f"predict at --batch-size {run.per_replica_batch})"
        )
    return reason, gpu, at


def anchors_for(
    profile: Profile,
    runs: Sequence[RunResult],
    catalog: Catalog,
    efficiency: Efficiency,
    tf32: bool = True,
    pinned: RunResult | None = None,
    strict: bool = True,
) -> Anchors:
    """The anchors of a prediction of ``profile``: the stored ``runs`` that measured its step;
    none when no run can, with a note for each run of the step left out.

    ``pinned`` (``--from-run``): that run alone. ``strict`` (``predict --from-run``, which only
    anchors): a user error saying why it cannot anchor, where it cannot. Not strict (a job
    command's ``--from-run``, which is the job's set-up too): a pinned run of another step (a
    report's other workloads) leaves the prediction to every stored run, silently; one of this
    step that cannot anchor (a CPU run, another precision asked) does too, said."""
    if pinned is not None and not strict:
        if step_matches(pinned, profile) is not None:
            rest = anchors_for(profile, runs, catalog, efficiency, tf32)
            other = pinned.model_copy(update={"precision": profile.precision})
            if pinned.precision != profile.precision and step_matches(other, profile) is None:
                why = f"it measured {pinned.precision}, the job asks {profile.precision}"
                return Anchors(rest.on, (f"not an anchor: the job's run {pinned.id} ({why})",
                                         *rest.notes))  # fmt: skip
            return rest  # a report's other workloads: nothing to say
        try:
            return anchors_for(profile, runs, catalog, efficiency, tf32, pinned)
        except UserError as exc:
            others = anchors_for(profile, runs, catalog, efficiency, tf32)
            why = exc.problem.removesuffix(".")
            return Anchors(others.on, (f"not an anchor: the job's {why}", *others.notes))
    limit = screen_factor()
    found: dict[str, list[tuple[RunResult, float, int]]] = {}  # GPU: (run, modelled, batch)
    gpus: dict[str, Gpu] = {}
    notes: list[str] = []
    for run in [pinned] if pinned is not None else runs:
        reason, gpu, at = _why_not(run, profile, catalog, tf32)
        if reason is None and gpu is not None and at is not None and run.samples_per_second:
            measured = run.samples_per_second.median
            modelled = at.batch / step_time(at, gpu, efficiency, tf32).seconds
            if 1 / limit <= measured / modelled <= limit:
                found.setdefault(gpu.id, []).append((run, modelled, at.batch))
                gpus[gpu.id] = gpu
                continue
            reason = (
                f"it measured {measured:,.4g} samples/s where the published rows' model "
                f"predicts {modelled:,.4g} on {gpu.id}, more than {limit:.1f}x off (twice the "
                "model's widest band): a wrong figure, not a measurement to scale every GPU by"
            )
        if pinned is not None:
            raise UserError(
                f"run {run.id} cannot anchor this prediction: {reason}.",
                "pick a successful one-GPU training run of the same workload (or --model) "
                "and precision ('gpuscout runs list'), or drop --from-run.",
            )
        if step_matches(run, profile) is None and never_anchors(run, catalog) is None:
            # a run of this step left out: said (one that anchors nothing is said once, apart)
            notes.append(f"not an anchor: your run {run.id} ({reason})")
    on = {}
    for gpu_id, got in found.items():
        batches = {b for _, _, b in got}
        # the runs at the prediction's batch, else at the nearest one measured
        batch = min(batches, key=lambda b: (abs(math.log(b / profile.batch)), b))
        apart = sorted(r.id for r, _, b in got if b != batch and r.id is not None)
        if apart:
            notes.append(
                f"not an anchor: your {runs_said(apart)} on {gpu_id} (at another batch than "
                f"{batch}, whose runs on that GPU anchor: the nearest to this prediction's)"
            )
        rates = [r.samples_per_second for r, _, b in got if b == batch and r.samples_per_second]
        modelled = next(m for _, m, b in got if b == batch)
        median = statistics.median(i.median for i in rates)
        low = min(i.ci_low or i.median for i in rates)
        high = max(i.ci_high or i.median for i in rates)
        ids = tuple(sorted(r.id for r, _, b in got if b == batch and r.id is not None))
        on[gpu_id] = Measured(gpus[gpu_id], median, low, high, batch, median / modelled, ids)
    return Anchors(on, tuple(notes))


def never_anchors(run: RunResult, catalog: Catalog) -> str | None:
    """Why a stored GPU run can anchor no prediction at all (None: it can anchor one of its
    own step), said once per command, so a run of yours is never left out silently."""
    if run.mode != "train":
        return None  # an inference run: no training prediction to anchor, and no news
    unusable = _unusable(run, catalog)
    if unusable is None and run.workload.startswith(FIT_PREFIX):
        return (
            "it was timed by ScoutCallback inside model.fit: it anchors that callback's own "
            "prediction; for the others, measure the model with bench --model or predict it "
            "with --model"
        )
    return unusable


__all__ = ["Anchors", "Measured", "anchors_for", "never_anchors", "step_matches"]
