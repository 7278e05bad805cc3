"""The training job a command prices: a built-in workload, your own model, or a stored run's
set-up, and how much of it (epochs of a dataset, samples, or steps).

``advise``, ``cost``, ``scout`` and ``report`` all ask the same question of a job ("how long
and how much on each GPU?"), so they resolve it here, once, the same way: the model is traced
once (the profile is cached by its file's hash) and every assumption made about the job's size
or batch comes back with it, to be printed beside the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuscout.catalog import Catalog
from gpuscout.core.errors import UserError
from gpuscout.core.records import FIT_PREFIX, RunResult
from gpuscout.core.run_settings import TRAINING_PRECISION
from gpuscout.predict.profile import Profile
from gpuscout.workloads import run_shape

MODEL_BATCH = 32  # per GPU for your model when none is given (predict --model's default too)
PRECISION = TRAINING_PRECISION  # the job's precision when none is given (and no stored run's)


@dataclass(frozen=True)
class JobSpec:
    """What the user said about the job (one of workload, model, run)."""

    workload: str | None = None  # a built-in workload
    model: str | None = None  # your model: FILE.py:FUNCTION or FILE.keras
    run: RunResult | None = None  # a stored run: its workload or model, batch and precision
    epochs: float | None = None
    # With --epochs: the dataset's size (samples an epoch). Alone: the samples of the whole job.
    samples: int | None = None
    # optimizer steps: of --global-batch where given, else of one GPU's batch
    steps: int | None = None
    batch_size: int | None = None  # per GPU
    global_batch: int | None = None  # samples per optimizer step over all GPUs (advise's)
    precision: str | None = None  # None: a stored run's own, else PRECISION
    backend: str = "tensorflow"  # what traces a step that is neither shipped nor cached
    # a built-in workload's settings: seq_len, and a decoder LLM's lora_rank and checkpointing
    dims: dict[str, int] = field(default_factory=dict)
    tokens: int | None = None  # a language model's job as tokens in all (sequences x length)

    @property
    def given(self) -> bool:
        """Whether any job was named at all (commands with another way in check this)."""
        return any(x is not None for x in (self.workload, self.model, self.run))


@dataclass(frozen=True)
class Job:
    """A job, resolved: the traced step, the samples to train on, and what was assumed."""

    profile: Profile
    samples: int  # samples trained on, in all
    unit: str  # what a sample is: images, sequences, samples
    label: str  # the job in words, e.g. "50 epochs x 1,200,000 samples of your model cnn.py"
    assumptions: tuple[str, ...] = ()
    workload: str | None = None  # the built-in workload, where it is one
    model: str | None = None  # your model's spec, where it is one
    # the job's own global batch (samples per optimizer step over all GPUs: a stored run's
    # batch per GPU x its replicas; None: the profile's batch) and where it comes from, the
    # default of advise's --global-batch
    global_batch: int | None = None
    batch_source: str = ""


def resolve_job(spec: JobSpec, catalog: Catalog) -> Job:
    """The job ``spec`` names, traced (or read from the profile cache) and sized.

    Size: ``--epochs E --samples N`` is E epochs of an N-sample dataset; ``--samples N`` alone
    is N samples in all; ``--epochs E`` alone uses the built-in workload's epoch (ImageNet's
    1,281,167 images for ResNet-50); ``--steps S`` is S steps of the batch per GPU. Your own
    model has no known dataset, so it needs ``--samples`` or ``--steps``: a price for a
    dataset size gpuscout made up would look as sure as a real one."""
    named = [n for n, v in (("--workload", spec.workload), ("--model", spec.model),
                            ("--from-run", spec.run)) if v is not None]  # fmt: skip
    if len(named) != 1:
        got = f" (got {' and '.join(named)})" if named else ""
        raise UserError(
            "say what the job trains: one of --workload W, --model FILE.py:FUNCTION or "
            f"--from-run ID{got}.",
            "e.g. --model my_model.py:build --samples 1200000 --epochs 50.",
        )
    workload, model, precision = spec.workload, spec.model, spec.precision or PRECISION
    batch, notes = spec.batch_size, []
    total, source = None, ""
    if spec.run is not None:
        workload, model, batch, precision = _from_run(spec.run, spec)
        notes.append(
            f"the job's set-up from stored run {spec.run.id}: "
            f"{model or workload}, batch {batch} per GPU, {precision}"
        )
        if spec.batch_size is None:
            total = batch * spec.run.replicas
            source = f"stored run {spec.run.id}'s: {batch} per GPU x {spec.run.replicas} " + (
                "replicas" if spec.run.replicas > 1 else "replica"
            )
    if model is not None and spec.tokens is not None:
        raise UserError(
            f"--tokens sizes a built-in language model's job, not your model's ({model}).",
            "give its size with --samples (and --epochs) or --steps.",
        )
    if model is not None and spec.dims:
        raise UserError(
            f"{', '.join(_SETTING_FLAGS[k] for k in spec.dims)} set a built-in workload's "
            f"shape, not your model's ({model}): its builder decides it.",
            "drop them, or name a built-in --workload.",
        )
    if model is not None:  # sized before tracing: a job without a size fails in a moment
        from gpuscout.measure.user_spec import backend_for_model, parse_model_spec
        from gpuscout.predict.profile_trace import get_user_profile

        # a missing file is one line, before TensorFlow loads; a stored run's plain PyTorch
        # model is captured by PyTorch (a --model's backend the command chose already)
        backend = backend_for_model(spec.backend, False, parse_model_spec(model))
        if batch is None:
            batch = MODEL_BATCH
            source = source or f"{batch}, gpuscout's default for your model"
            notes.append(
                f"batch {batch} for your model, gpuscout's default (per GPU on every option: "
                "--batch-size; as the global batch advise, report and scout split over the "
                "GPUs: --global-batch)"
            )
        what = f"your model {model}"
        samples, size = _size(spec, None, batch, "samples", what)
        profile = get_user_profile(model, batch, precision, backend)
        unit = "samples"
    else:
        from gpuscout.core.limits import check_fits_a_gpu
        from gpuscout.predict.profile_trace import get_profile
        from gpuscout.workloads import get_workload

        w = get_workload(workload or "", own_model=False)
        if batch is None:
            batch = w.default_batch_gpu
            source = f"{w.name}'s default batch"
        dims = w.resolve(spec.dims)
        unit, what, workload = w.epoch_unit, w.name, w.name
        shape = run_shape(w.name, dims)[1] if spec.dims else ""
        what = f"{what} ({shape})" if shape else what
        if spec.tokens is not None:
            samples, size = _tokens(spec, run_shape(w.name, dims)[0], w.name)
        else:
            samples, size = _size(spec, w.epoch_samples, batch, unit, what)
        check_fits_a_gpu(w.name, dims, batch, precision, "train", catalog)
        profile = get_profile(w.name, dims, batch, precision, spec.backend)
    return Job(profile, samples, unit, f"{size} of {what}", tuple(notes), workload, model,
               total, source)  # fmt: skip


_SETTING_FLAGS = {"seq_len": "--seq-len", "lora_rank": "--mode lora",
                  "checkpointing": "--checkpointing"}  # fmt: skip


def _from_run(run: RunResult, spec: JobSpec) -> tuple[str | None, str | None, int, str]:
    """A stored run's workload or model, batch per GPU and precision (a flag given overrides)."""
    if run.workload.startswith(FIT_PREFIX):
        raise UserError(
            f"run {run.id} was timed by ScoutCallback inside model.fit: gpuscout cannot trace "
            "its step from the store.",
            "give the model instead: --model FILE.py:FUNCTION (the function that builds it).",
        )
    batch = spec.batch_size or run.per_replica_batch
    precision = spec.precision or run.precision  # a --precision typed wins, even the default
    if run.config.model:
        return None, run.config.model, batch, precision
    return run.workload, None, batch, precision


def _tokens(spec: JobSpec, per: int | None, workload: str) -> tuple[int, str]:
    """Sequences in a job of ``spec.tokens`` tokens (whole sequences, rounded up)."""
    assert spec.tokens is not None
    others = [f for f, v in (("--epochs", spec.epochs), ("--samples", spec.samples),
                             ("--steps", spec.steps)) if v is not None]  # fmt: skip
    if others:
        raise UserError(f"--tokens and {others[0]} contradict each other: each sizes the "
                        "whole job.", "give --tokens alone, or drop it.")  # fmt: skip
    if per is None:
        raise UserError(
            f"--tokens: {workload} is not a language model (its samples are not "
            "sequences of tokens).",
            "give --epochs, --samples or --steps.",
        )
    sequences = max(1, math.ceil(spec.tokens / per))
    return sequences, f"{spec.tokens:,} tokens ({sequences:,} sequences of {per:,})"


def _size(spec: JobSpec, epoch: int | None, batch: int, unit: str, what: str) -> tuple[int, str]:
    """Samples in all, and the job's size in words."""
    if spec.steps is not None:
        if spec.epochs is not None or spec.samples is not None:
            raise UserError(
                "--steps is a whole job by itself: give it without --epochs and --samples.",
                "e.g. --steps 100000, or --epochs 50 --samples 1200000.",
            )
        if spec.global_batch is not None:  # optimizer steps of the global batch given
            return spec.steps * spec.global_batch, (
                f"{spec.steps:,} steps x {spec.global_batch:,} {unit} (the global batch)"
            )
        return spec.steps * batch, f"{spec.steps:,} steps x {batch} {unit} (one GPU's batch)"
    if spec.epochs is not None and spec.samples is not None:
        total = math.ceil(spec.epochs * spec.samples)
        return total, f"{spec.epochs:g} epochs x {spec.samples:,} {unit}"
    if spec.samples is not None:
        return spec.samples, f"{spec.samples:,} {unit}"
    if spec.epochs is not None:
        if epoch is None:
            raise UserError(
                f"--epochs {spec.epochs:g} of {what}: its dataset size is unknown.",
                "add --samples N, the samples in one epoch (e.g. --samples 1200000).",
            )
        return math.ceil(spec.epochs * epoch), f"{spec.epochs:g} epochs x {epoch:,} {unit}"
    raise UserError(
        "the job needs its size: --epochs E (with --samples N for your own model), "
        "--samples N, or --steps S.",
        "e.g. --epochs 90 for resnet50, or --samples 1200000 --epochs 50 for your model.",
    )


__all__ = ["MODEL_BATCH", "Job", "JobSpec", "resolve_job"]
