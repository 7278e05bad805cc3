"""``gpuscout predict`` as a library call: what was asked (:class:`PredictRequest`) in, the rows
and every assumption behind them (:class:`PredictAnswer`) out, through the one prediction
session (``session.py``) every command uses. The command line only parses and renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuscout.catalog import Catalog, Gpu, load_catalog, peak_tflops
from gpuscout.catalog.cost_defaults import cost_defaults
from gpuscout.core.articles import REFERENCE_GPU
from gpuscout.core.errors import UserError
from gpuscout.core.records import RunResult
from gpuscout.core.run_settings import TRAINING_PRECISION, tf32_prediction_note
from gpuscout.predict import scaling
from gpuscout.predict.job import MODEL_BATCH
from gpuscout.predict.predictor import Prediction
from gpuscout.predict.profile import OP_BY_OP, Profile
from gpuscout.predict.session import Session, session


@dataclass(frozen=True)
class PredictRequest:
    """What ``gpuscout predict`` was asked, parsed (the defaults are the command's)."""

    gpus: str  # a comma list of catalog names, or "all"
    workload: str | None = None  # a built-in workload, or
    model: str | None = None  # your model: FILE.py:FUNCTION or FILE.keras
    precision: str | None = None  # None: TRAINING_PRECISION (every command's), said
    backend: str = "tensorflow"  # the one that traces a step not shipped or cached
    stack: str | None = None  # --stack: the software level where no run anchors
    tf32: bool = True
    mode: Literal["train", "inference"] = "train"
    batch_size: int | None = None  # per GPU (default: the workload's; 32 for a model)
    seq_len: int | None = None
    lora_rank: int | None = None  # LoRA adapters of this rank, the base frozen (decoder LLMs)
    checkpointing: bool = False  # gradient checkpointing: each block recomputed (decoder LLMs)
    counts: Sequence[tuple[int, int]] = ((1, 1),)  # (machines, GPUs per machine)
    sharded: bool = False  # weights sharded over the GPUs (FSDP, ZeRO-3): all-gathered each step
    # QLoRA's base in 4 bits: only what ``sharded`` all-gathers (its dequantization is not
    # predicted, nor is a QLoRA step's memory)
    four_bit_base: bool = False
    # the step run op by op (eager PyTorch of a model written as tensor ops, no torch.compile:
    # Hugging Face's Llama with PEFT's LoRA), not as XLA fuses it (``Profile.as_op_by_op``)
    op_by_op: bool = False
    # a plain PyTorch --model under torch.compile: its captured step fused (``profile_trace.
    # COMPILED``), not op by op as eager PyTorch runs it
    compiled: bool = False
    network_gbit: float = scaling.DEFAULT_NETWORK_GBIT
    epoch_samples: int | None = None
    reference: str = REFERENCE_GPU
    from_run: int | None = None  # the stored run that alone anchors (None: every matching one)
    db: str | None = None  # the results database (None: GPUSCOUT_DB or the user data dir)
    catalog: Sequence[str] = ()  # your catalog files


@dataclass
class PredictAnswer:
    """The predicted rows, the step they are for, and the assumptions common to all rows (each
    row carries its own too)."""

    mode: Literal["train", "inference"]
    rows: list[Prediction]
    profile: Profile
    reference: str
    unit: str
    notes: list[str] = field(default_factory=list)
    # Watts each row's GPUs draw while training (count x TDP x the sourced share), for kWh
    watts: dict[tuple[str, int], float] = field(default_factory=dict)

    def epoch_kwh(self, r: Prediction) -> float | None:
        """Energy of one epoch on the row's GPUs, where its draw is known."""
        w = self.watts.get((r.gpu, r.count))
        return None if w is None else w * r.epoch_seconds / 3.6e6

    @property
    def row_assumptions(self) -> list[str]:
        """Every row's own assumptions, once each."""
        return sorted({a for r in self.rows for a in r.assumptions})

    @property
    def fits_any(self) -> bool:
        return any(r.fits_memory for r in self.rows)

    def no_fit_fix(self) -> str:
        """What to change when the step fits on none of the GPUs asked: a smaller batch while
        there is one to lower; at batch 1, what makes the step itself smaller (LoRA for a
        decoder LLM trained fully, a shorter sequence) or a GPU with more memory."""
        if self.profile.batch > 1:
            return "lower --batch-size."
        dims = self.profile.dims
        ways = ["--mode lora"] if dims.get("lora_rank") == 0 else []
        ways += ["a lower --seq-len"] if "seq_len" in dims else []
        last = "a GPU with more memory (--gpus all)"
        return f"at batch 1 try {', '.join(ways)}, or {last}." if ways else f"try {last}."

    def to_json(self) -> list[dict[str, Any]]:
        """``predict --json``: one object per row, with the common assumptions."""
        if self.mode == "inference":
            return [
                r.to_json_dict()
                | {
                    "mode": "inference",
                    "latency_s": self.profile.batch / r.samples_per_second,
                    "common_assumptions": self.notes,
                }
                for r in self.rows
            ]
        return [r.to_json_dict() | self._tokens(r) | {"epoch_kwh": self.epoch_kwh(r)}
                | {"common_assumptions": self.notes} for r in self.rows]  # fmt: skip

    @property
    def tokens_per_sample(self) -> int | None:
        """A causal language model's tokens per sequence (its sequence length), else None."""
        from gpuscout.workloads import run_shape

        return run_shape(self.profile.workload, self.profile.dims)[0]

    def _tokens(self, r: Prediction) -> dict[str, float]:
        """The row's rates in tokens/s (all its GPUs together), for a language model."""
        per = self.tokens_per_sample
        if per is None:
            return {}
        return {"tokens_per_second": r.samples_per_second * per, "tokens_low": r.low * per,
                "tokens_high": r.high * per}  # fmt: skip


def predict_for(req: PredictRequest, profile: Profile | None = None) -> PredictAnswer:
    """Predict as asked: training on 1..N GPUs, or one GPU's forward pass (``inference``).

    ``profile``: the workload's training step profiled elsewhere, in place of the one traced
    or shipped for it (the fine-tuning check's plain-PyTorch decoder, captured from torch:
    ``finetuning_torch.py``); it must be the step asked (workload, sizes, batch, precision)."""
    catalog = load_catalog(req.catalog)
    if req.mode == "inference":
        return _inference(req, catalog)
    return _training(req, catalog, profile)


def resolve_gpus(catalog: Catalog, names: str) -> list[Gpu]:
    """The GPUs of a comma list ("all": the whole catalog), each once, in the order named."""
    wanted = [g for g in names.split(",") if g.strip()]
    if wanted == ["all"]:
        return list(catalog.gpus.values())
    return list({g.id: g for g in (catalog.resolve(n).gpu for n in wanted)}.values())


def check_precision(gpus: Sequence[Gpu], precision: str) -> None:
    """Naming a GPU that lacks the precision's tensor cores is a mistake worth stopping on."""
    for gpu in gpus:
        rate = peak_tflops(gpu, precision)[1]
        if "no " in rate:
            kind = {"mixed_bfloat16": "BF16", "mixed_float16": "FP16"}.get(precision, precision)
            raise UserError(
                f"{gpu.id} has no {kind} tensor cores: {precision} would run at its FP32 "
                "rate, which is not what you would choose on it.",
                f"use --precision mixed_float16 for {gpu.id}, or leave it out of --gpus "
                "('--gpus all' predicts it anyway, marked).",
            )


def _backend(req: PredictRequest) -> str:
    """The backend to trace on; JAX's absence is one line before anything is traced."""
    if req.backend == "jax":
        from gpuscout.measure.backends import require_jax

        require_jax("predict --backend jax")
    if req.backend == "torch":
        from gpuscout.measure.backends import refuse_torch_workload, require_torch

        refuse_torch_workload("predict", req.backend, req.workload)
        require_torch(f"predict --model {req.model} (a plain PyTorch model)")
    return req.backend


def _tf32_notes(req: PredictRequest, precision: str) -> list[str]:
    """The TF32 assumption line, when there is one (see tf32_prediction_note)."""
    note = tf32_prediction_note(precision, req.tf32, req.backend)
    return [note] if note else []


def _precision(req: PredictRequest, run: RunResult | None = None) -> tuple[str, list[str]]:
    """The precision asked; else the ``--from-run`` run's own (as every job command takes it);
    else every command's default for training, said as such."""
    if req.precision is not None:
        return req.precision, []
    if run is not None:
        return run.precision, [f"precision {run.precision}, run {run.id}'s own (--from-run)"]
    if req.mode == "inference":
        return "fp32", ["precision fp32 (the default for inference; set it with --precision)"]
    return TRAINING_PRECISION, [
        f"precision {TRAINING_PRECISION}, every command's default for training (set it with "
        "--precision)"
    ]


def _training(req: PredictRequest, catalog: Catalog, given: Profile | None = None) -> PredictAnswer:
    from gpuscout.core.limits import check_fits_a_gpu
    from gpuscout.predict.profile_trace import get_profile, get_user_profile
    from gpuscout.workloads import get_workload
    from gpuscout.workloads.llm import checkpointing_dims

    model = session(catalog, req.db, stack=req.stack, from_run=req.from_run, backend=req.backend)
    precision, notes = _precision(req, model.pinned)
    if req.model:
        batch = req.batch_size or MODEL_BATCH  # the same default as every job (predict.job)
        if not req.batch_size:
            notes.append(f"batch {batch} per GPU for your model (set it with --batch-size)")
        profile = get_user_profile(req.model, batch, precision, _backend(req), req.compiled)
        epoch, unit = req.epoch_samples or 1_000_000, "samples"
        if not req.epoch_samples:
            notes.append("epoch = 1,000,000 samples (set it with --epoch-samples)")
    else:
        workload = get_workload(req.workload or "")
        dims = {"seq_len": req.seq_len} if req.seq_len else {}
        if req.lora_rank:
            dims["lora_rank"] = req.lora_rank
        dims.update(checkpointing_dims(workload.name, req.checkpointing))
        batch = req.batch_size or workload.default_batch_gpu
        resolved = workload.resolve(dims)
        check_fits_a_gpu(workload.name, resolved, batch, precision, "train", catalog)
        profile = given or get_profile(workload.name, resolved, batch, precision, _backend(req))
        epoch, unit = req.epoch_samples or workload.epoch_samples, workload.epoch_unit
    if req.op_by_op and OP_BY_OP not in profile.method:  # a PyTorch step is already eager
        profile = _op_by_op(profile)
    gpus = resolve_gpus(catalog, req.gpus)
    reference = catalog.resolve(req.reference).gpu
    for gpu in gpus:  # 16 SXM GPUs are two machines: say so rather than predict one
        for nodes, per_node in req.counts:
            scaling.check_machine(gpu, nodes, per_node)
    if [g for g in req.gpus.split(",") if g.strip()] != ["all"] and req.precision is not None:
        check_precision(gpus, precision)
    notes += model.notes
    if model.measured(profile, req.tf32)[1]:
        notes.append(
            "measured scaling: efficiency from your 'bench --scaling' runs on that GPU "
            "(same workload, precision and batch per GPU), against their 1-GPU run"
        )
    rows, common = model.predict(
        profile,
        gpus,
        list(req.counts),
        reference=reference,
        epoch_samples=epoch,
        network_gbit=req.network_gbit,
        tf32=req.tf32,
        sharded=req.sharded,
        four_bit_base=req.four_bit_base,
    )
    notes = [*notes, *common, *_tf32_notes(req, precision), f"epoch = {epoch:,} {unit}"]
    notes += _fit_notes(rows, profile, catalog) + model.caveats(profile, gpus)
    share = cost_defaults().value("power_utilization")
    notes.append(
        f"energy: the GPUs draw {share:.0%} of their TDP while training "
        f"({cost_defaults().source('power_utilization')}); kWh an epoch in --json, and "
        "priced by gpuscout cost"
    )
    tdp = {r.gpu: catalog.gpus[r.gpu].tdp_w for r in rows}
    watts = {(r.gpu, r.count): r.count * w * share for r in rows if (w := tdp[r.gpu])}
    return PredictAnswer("train", rows, profile, reference.id, unit, notes, watts)


def _op_by_op(profile: Profile) -> Profile:
    """The step's op-by-op kernels in place of the fused ones (``--op-by-op``); a profile
    without them is one line saying so."""
    try:
        return profile.as_op_by_op()
    except ValueError as e:
        raise UserError(
            f"--op-by-op: {e}.",
            "drop --op-by-op (the step is then counted as XLA fuses it), or predict a llama-* "
            "workload.",
        ) from e


def _fit_notes(rows: list[Prediction], profile: Profile, catalog: Catalog) -> list[str]:
    """Each one-GPU row that does not fit gets what would make it fit (``fits_with``), and a
    note saying so; estimates from the traced step's parts, named as such."""
    from gpuscout.catalog.models import MEMORY_HEADROOM
    from gpuscout.predict.fit_options import fit_options

    notes = []
    for row in rows:
        if row.fits_memory or row.count != 1:
            continue
        usable = catalog.gpus[row.gpu].memory_gb * 1e9 * MEMORY_HEADROOM
        found = fit_options(profile, usable)
        row.fits_with = [{"how": how, "memory_needed_gb": need / 1e9} for how, need in found]
        ways = "; ".join(f"{how} ({need / 1e9:.1f} GB)" for how, need in found)
        notes.append(
            f"{row.gpu} ({usable / 1e9:.1f} GB usable) would fit with: {ways} (estimated from "
            "the traced step's parts, see docs/predict.md)" if found
            else f"{row.gpu} ({usable / 1e9:.1f} GB usable): no estimated way fits this step"
        )  # fmt: skip
    return notes


def _inference(req: PredictRequest, catalog: Catalog) -> PredictAnswer:
    """One GPU's forward pass per batch: serving throughput and the model's share of latency."""
    from gpuscout.predict.profile_trace import get_forward_profile

    if list(req.counts) != [(1, 1)] or req.from_run:
        raise UserError(
            "--mode inference predicts one GPU, without --count or --from-run.",
            "serving scales by adding replicas: divide your load by one GPU's samples/s.",
        )
    batch = req.batch_size or 1
    precision, said = _precision(req)
    dims = {"seq_len": req.seq_len} if req.seq_len else {}
    if req.workload:  # before tracing: no GPU holds the step's largest activation
        from gpuscout.core.limits import check_fits_a_gpu
        from gpuscout.workloads import get_workload

        resolved = get_workload(req.workload).resolve(dims)
        check_fits_a_gpu(req.workload, resolved, batch, precision, "forward", catalog)
    profile = get_forward_profile(req.workload, req.model, dims, batch, precision, _backend(req),
                                  req.compiled)  # fmt: skip
    gpus = resolve_gpus(catalog, req.gpus)
    reference = catalog.resolve(req.reference).gpu
    model: Session = session(catalog, req.db, stack=req.stack, backend=req.backend)
    rows, common = model.predict(profile, gpus, [1], reference=reference, tf32=req.tf32)
    notes = [
        "inference, predicted: one forward pass per request batch, as 'bench --mode "
        "inference' times it, without serving overhead, queueing or host transfers; measure "
        "those with bench --mode inference",
        "each kernel's launch (data/overheads.csv) and one forward call's dispatch are "
        "counted, not a training step's cost; small batches are launch-bound on a big GPU",
        f"batch {batch} per request" + ("" if req.batch_size else " (set it with --batch-size)"),
        "efficiencies fitted to published *training* measurements, applied to the forward "
        "pass (a stored training run anchors no inference prediction)",
        *(c for c in common if not c.startswith(("memory:", "several GPUs"))),
        "memory: the weights (a forward pass keeps no activations for a backward pass)",
        *said,
        *_tf32_notes(req, precision),
        *model.notes,
    ]
    return PredictAnswer("inference", rows, profile, reference.id, "samples", notes)


__all__ = [
    "PredictAnswer",
    "PredictRequest",
    "check_precision",
    "predict_for",
    "resolve_gpus",
]
