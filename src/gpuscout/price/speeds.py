"""An option's speed and scaling, for ``cost``: given by a flag, else predicted by the one
session (anchored on your stored runs of the step), on the GPUs laid out as the option rents
or owns them; and what is priced, the :class:`Job`. Apart from ``options.py``, which turns
what the user asked for into priced options with them."""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.catalog import Gpu
from gpuscout.catalog.rates import training_tflops
from gpuscout.core import articles
from gpuscout.core.errors import UserError
from gpuscout.core.units import fmt_rate, fmt_sig
from gpuscout.predict.batch_plan import accumulated, batch_words, plan_batches
from gpuscout.predict.predictor import Prediction
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.scaling import DEFAULT_NETWORK_GBIT
from gpuscout.predict.session import Session
from gpuscout.workloads import run_shape


@dataclass(frozen=True)
class Job:
    """What is priced: hours on one reference GPU, said in words; for a workload job, its
    step, whose predicted speed on each GPU sets the option's."""

    reference_gpu_hours: float
    text: str
    profile: Profile | None = None  # None: a job given in GPU-hours, which names no step
    unit: str = "samples"
    # samples per optimizer step that an option's GPUs split (``predict.batch_plan``, as
    # ``advise`` splits them); None: the profile's batch on every GPU (-b)
    global_batch: int | None = None


class Speeds:
    """An option's speed against the reference GPU and its scaling: given by a flag, else
    predicted by the session (a spec ratio for the speed of a job in GPU-hours)."""

    def __init__(self, model: Session, reference: Gpu, job: Job) -> None:
        self.model, self.reference, self.job = model, reference, job
        self._reference: float | None = None  # samples/s of one reference GPU, predicted

    def _step(self) -> Profile:
        """The step predictions are made on: the job's, else the articles' benchmark's."""
        if self.job.profile is not None:
            return self.job.profile
        found = cached(
            articles.BENCHMARK_WORKLOAD, {}, articles.BENCHMARK_BATCH, articles.BENCHMARK_PRECISION
        )
        if found is None:  # shipped with the package: only a broken install lacks it
            raise UserError(
                f"no shipped step profile of {articles.BENCHMARK_WORKLOAD} to scale with.",
                "reinstall gpuscout, or give --scaling N=EFF.",
            )
        return found

    def _batch(self, gpu: Gpu, count: int) -> tuple[int | None, int, str]:
        """The batch per GPU ``count`` of ``gpu`` run for the job's global batch, its
        accumulation steps, and both in words (None, 1, "": the profile's batch, -b)."""
        job = self.job
        if job.global_batch is None or job.profile is None:
            return None, 1, ""
        plan = plan_batches(job.profile, gpu, (count,), job.global_batch, fixed=False)
        if plan.too_many or not plan.fits:  # unpriced (crowded), or too big: as before
            return None, 1, ""
        batch, steps = plan.per_count[count]
        plain = count == 1 and steps == 1 and batch == job.profile.batch  # nothing to say
        return batch, steps, "" if plain else batch_words(batch, steps, job.global_batch)

    def crowded(self, count: int) -> tuple[str, str] | None:
        """Why ``count`` GPUs cannot split the job's global batch (more GPUs than it has
        samples: some would train nothing), and what would help; None where they can. ``cost``
        shows such an option unpriced, as ``advise`` leaves it out."""
        total = self.job.global_batch
        if total is None or count <= total:
            return None
        return (
            f"more GPUs than the {total:,} sample(s) of the global batch: some would have "
            "nothing to train",
            f"give --global-batch {count} or more, or -b to fix the batch per GPU",
        )

    def _reference_sps(self) -> float:
        if self._reference is None:
            self._reference = self.model.option(self._step(), self.reference).samples_per_second
        return self._reference

    def _tokens(self, samples_per_second: float) -> str:
        """ " (N tokens/s)" for a language model's job, else ""."""
        profile = self.job.profile
        per = run_shape(profile.workload, profile.dims)[0] if profile is not None else None
        return f" ({fmt_rate(samples_per_second * per)} tokens/s)" if per else ""

    def scaling(
        self, gpu: Gpu, count: int, scalings: dict[str, float],
        layout: tuple[int, int] | None = None, network_gbit: float = DEFAULT_NETWORK_GBIT,
    ) -> float:  # fmt: skip
        """The job's scaling on ``count`` GPUs laid out as ``layout`` (given, else fitted)."""
        key = next((k for k in (f"{gpu.id}x{count}", str(count)) if k in scalings), None)
        if count == 1:
            return 1.0
        if key is not None:
            return scalings[key]
        batch, steps, _ = self._batch(gpu, count)
        row = self.model.option(self._step(), gpu, count, layout=layout,
                                network_gbit=network_gbit, batch=batch)  # fmt: skip
        return accumulated(row, steps).scaling_efficiency

    def of(
        self,
        gpu: Gpu,
        count: int,
        speedups: dict[str, float],
        scalings: dict[str, float],
        notes: list[str],
        layout: tuple[int, int] | None = None,
        network_gbit: float = DEFAULT_NETWORK_GBIT,
    ) -> tuple[float, float, bool]:
        """(speedup against the reference GPU, scaling, whether the fitted model gave it), on
        ``count`` GPUs laid out as ``layout`` (a rental's instances; None: one machine), at
        the batch per GPU its share of the job's global batch gives (said in its notes)."""
        predicted = self.job.profile is not None and gpu.id not in speedups
        batch, steps, words = self._batch(gpu, count) if predicted else (None, 1, "")
        start = len(notes)
        try:
            return self._of(gpu, count, speedups, scalings, notes, layout, network_gbit,
                            batch, steps)  # fmt: skip
        finally:  # the batch said with the option's first note (its speed), not before it
            if words and len(notes) > start:
                notes[start] += f"; {words}"
            elif words:
                notes.append(words)

    def _of(
        self, gpu: Gpu, count: int, speedups: dict[str, float], scalings: dict[str, float],
        notes: list[str], layout: tuple[int, int] | None, network_gbit: float,
        batch: int | None, steps: int,
    ) -> tuple[float, float, bool]:  # fmt: skip
        reference, unit = self.reference, self.job.unit
        predicted = self.job.profile is not None and gpu.id not in speedups
        one = self.model.option(self._step(), gpu, batch=batch) if predicted else None
        if gpu.id in speedups:
            speedup = speedups[gpu.id]
            notes.append(f"speed {speedup:g}x {reference.id} (given)")
        elif one is not None:
            speedup = one.samples_per_second / self._reference_sps()
        else:
            speedup = training_tflops(gpu) / training_tflops(reference)
            if gpu.id != reference.id:
                notes.append(
                    f"speed {fmt_sig(speedup)}x {reference.id} from training TFLOPS (spec "
                    "ratio, no workload)"
                )
        key = next((k for k in (f"{gpu.id}x{count}", str(count)) if k in scalings), None)
        if count == 1:
            if one is not None:
                notes.append(f"{_how(one)} {fmt_rate(one.samples_per_second)} {unit}/s"
                             + self._tokens(one.samples_per_second))  # fmt: skip
            return speedup, 1.0, False
        if key is not None:
            scaling = scalings[key]
            notes.append(f"scaling {scaling:.0%} on {count} GPUs (given)")
            if one is not None:
                notes.append(f"{_how(one)} {fmt_rate(one.samples_per_second)} {unit}/s per GPU")
            return speedup, scaling, False
        row = self.model.option(self._step(), gpu, count, layout=layout,
                                network_gbit=network_gbit, batch=batch)  # fmt: skip
        row = accumulated(row, steps)
        scaling = row.scaling_efficiency
        how = f"{row.link}; " if row.link else ""
        if one is not None:
            notes.append(
                f"predicted {fmt_rate(row.samples_per_second)} {unit}/s"
                f"{self._tokens(row.samples_per_second)}: {count} x "
                f"{fmt_rate(one.samples_per_second)} ({_how(one)}) at {scaling:.0%} scaling "
                f"({how}fitted "
                "scaling model)"
            )
        else:
            notes.append(f"scaling {scaling:.0%} on {count} GPUs ({how}fitted scaling model)")
        return speedup, scaling, True


def _how(row: Prediction) -> str:
    """How a one-GPU figure was had: measured (your stored run of the step on that GPU) or
    predicted (anchored on your runs or not)."""
    return "measured" if row.method.startswith("measured") else "predicted"


__all__ = ["Job", "Speeds"]
