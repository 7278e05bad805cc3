"""Auditing a relative claim ("an RTX 4090 is 1.4x an A100 for ResNet-50") per setting.

A ratio of two GPUs' speeds depends on the precision more than on anything else: float32
matmuls on TF32 tensor cores (TensorFlow's default on Ampere and later), on CUDA cores
(``tf32=False``, PyTorch's default for matmuls), or mixed precision on FP16 or BF16 tensor
cores. A claim that states none of these can be true under one and false under the others, so
it is judged under each, and the verdict says under which it can hold.

The ratio is the one prediction session's (``predict/session.py``): ``audit`` and ``predict``
give the same ratio for the same setting. Its range is the prediction model's chip-relative
band (``out_of_sample.Figures.chip_relative``): how far one GPU's speed relative to the other
GPUs of the same source was off for chips left out of the fit. That is the error of a ratio
measured on one software stack, which both GPUs of the claim share, so the stack's own error
cancels; the absolute band (whole sources left out) would count it twice.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gpuscout.catalog import Catalog, Gpu
from gpuscout.core.errors import UserError

if TYPE_CHECKING:
    from gpuscout.predict.profile import Profile
    from gpuscout.predict.session import Session
    from gpuscout.predict.uncertainty import Band
    from gpuscout.store import Store

RATIO_LOW, RATIO_HIGH = 1e-3, 1e3  # a thousandfold either way: past any two GPUs
TIMES = "\u00d7"  # the multiplication sign, as "1.4\u00d7" is often written
# "GPU=RATIO GPU": the ratio followed by x, X, * or the multiplication sign, or a space alone.
_RIGHT = re.compile(
    rf"^\s*[x{TIMES}]?(?P<ratio>[^\sxX*{TIMES}]+?)\s*(?:[xX*{TIMES}]\s*|\s+)(?P<gpu>\S.*?)\s*$"
)
FORMAT_FIX = (
    'write it as GPU=RATIOx GPU, e.g. --claim "rtx-4090=1.4x a100-40gb" (the first GPU '
    "is RATIO times as fast as the second)"
)
SettingVerdict = Literal["holds within range", "outside range", "skipped"]
OverallVerdict = Literal["holds", "depends on setting", "outside range"]


@dataclass(frozen=True)
class RelativeClaim:
    """ "``gpu`` trains ``workload`` ``ratio`` times as fast as ``reference``", one GPU each,
    at the same batch per GPU."""

    gpu: str
    ratio: float
    reference: str
    workload: str
    batch_size: int | None = None  # per GPU (None: the workload's default, as predict's)
    seq_len: int | None = None
    text: str = ""  # as the user wrote it


@dataclass(frozen=True)
class Setting:
    """A precision setting a relative claim is judged under, and who uses it."""

    name: str
    precision: str
    tf32: bool
    meaning: str


SETTINGS = (
    Setting("fp32 with TF32", "fp32", True, "TensorFlow's default for float32 on Ampere and later"),
    Setting("fp32 without TF32", "fp32", False, "tf32=False; PyTorch's default for matmuls"),
    Setting("mixed_float16", "mixed_float16", True, "FP16 tensor cores, where a GPU has them"),
    Setting("mixed_bfloat16", "mixed_bfloat16", True, "BF16 tensor cores, where a GPU has them"),
)


@dataclass
class Judged:
    """The claim under one setting: the predicted ratio, its range and the verdict."""

    setting: str
    meaning: str
    precision: str
    tf32: bool
    verdict: SettingVerdict
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    samples_per_second: dict[str, float] = field(default_factory=dict)  # per GPU id
    fits_memory: dict[str, bool] = field(default_factory=dict)  # per GPU id, at this batch
    reason: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class RelativeVerdict:
    """What ``audit --claim`` says: a verdict per setting and where the claim can hold."""

    claim: str
    gpu_id: str
    gpu_name: str
    reference_id: str
    reference_name: str
    claimed_ratio: float
    workload: str
    batch_size: int
    unit: str
    verdict: OverallVerdict
    overall: str
    holds_under: list[str]
    band: dict[str, float | str]
    settings: list[Judged]
    assumptions: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    kind: str = "relative"

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_relative(text: str) -> tuple[str, float, str]:
    """(GPU, ratio, reference GPU) of "rtx-4090=1.4x a100-40gb"; the x may be X, * or the
    multiplication sign, or left out ("rtx-4090=1.4 a100-40gb"), as claims are written."""
    left, equals, right = text.partition("=")
    found = _RIGHT.match(right)
    if not equals or not left.strip() or found is None:
        raise UserError(f"cannot read the claim '{text}'.", f"{FORMAT_FIX}.")
    number = found["ratio"]
    try:
        ratio = float(number)
    except ValueError:
        raise UserError(
            f"the claim '{text}' gives '{number}' as its ratio, not a number.", f"{FORMAT_FIX}."
        ) from None
    if not (math.isfinite(ratio) and RATIO_LOW <= ratio <= RATIO_HIGH):
        raise UserError(
            f"the claim '{text}' gives the ratio {number}: a ratio of speeds is a positive "
            f"number, here between {RATIO_LOW:g} and {RATIO_HIGH:g}.",
            f"{FORMAT_FIX}.",
        )
    return left.strip(), ratio, found["gpu"]


def ratio_band(workload: str) -> Band:
    """The range of a predicted ratio of two GPUs' speeds, and which held-out errors it is:
    the chip-relative band of the workload's family where published rows validate it, else
    the prediction's own band for a workload they do not (the widest there is, said)."""
    from gpuscout.predict.out_of_sample import FAMILIES, shipped
    from gpuscout.predict.uncertainty import VALIDATED, Band, band

    figures = shipped()
    family = FAMILIES.get(workload, workload)
    if workload in VALIDATED and family in figures.chip_relative:
        low, high = figures.chip_relative[family]
        level = figures.levels.get(f"chip:{family}")
        nested = figures.nested.get(f"chip:{family}")
        how = f"the middle {level:.0f}% of those errors" if level else "those errors"
        held = f"; it covered {nested:.0%} of chips left out of the band too" if nested else ""
        return Band(
            low,
            high,
            f"{family}'s chip-relative band: a GPU's predicted speed relative to the other GPUs "
            f"of the same published source, for chips left out of the fit ({how}{held}); a "
            "ratio's two GPUs share one software stack, so the stack's own error cancels",
        )
    own = band(workload, "train")
    return Band(own.low, own.high, f"no chip-relative band for {workload}: {own.label}")


def judge_relative(
    claim: RelativeClaim,
    catalog: Catalog,
    db: Store | str | Path | None = None,
    *,
    model: Session | None = None,
) -> RelativeVerdict:
    """The claim under each setting of ``SETTINGS``, from the one prediction session (made from
    ``catalog`` and the stored runs in ``db``, or ``model`` when given), and the overall line."""
    from gpuscout.predict.session import session
    from gpuscout.workloads import get_workload

    found, other = catalog.resolve(claim.gpu), catalog.resolve(claim.reference)
    gpu, reference = found.gpu, other.gpu
    if gpu.id == reference.id:
        raise UserError(
            f"the claim '{claim.text or claim.gpu}' compares {gpu.id} with itself.",
            "name two different GPUs.",
        )
    workload = get_workload(claim.workload, own_model=False)
    if claim.seq_len is not None and "seq_len" not in workload.dims:
        raise UserError(f"workload '{workload.name}' has no sequence length.", "drop --seq-len.")
    dims = workload.resolve({"seq_len": claim.seq_len} if claim.seq_len else {})
    batch = claim.batch_size or workload.default_batch_gpu
    model = model or session(catalog, db)
    band = ratio_band(workload.name)
    judged = [
        _judge(
            claim,
            s,
            (gpu, reference),
            _profile(workload.name, dims, batch, s.precision, catalog),
            model,
            band,
        )
        for s in SETTINGS
    ]
    common = _common_notes(judged)
    holds = [j.setting for j in judged if j.verdict == "holds within range"]
    verdict, overall = _overall(claim.ratio, judged, holds)
    assumptions = [
        *(r.assumption for r in (found, other) if r.assumption),
        f"one {gpu.id} against one {reference.id}, at the same batch per GPU ({batch}"
        + ("" if claim.batch_size else f", {workload.name}'s default: set it with --batch-size")
        + ")",
        *([f"sequence length {dims['seq_len']:,}"] if "seq_len" in dims else []),
        f"ratio range x{band.low:.2f} to x{band.high:.2f} on the predicted ratio: {band.label}",
        *common,
    ]
    return RelativeVerdict(
        claim=claim.text or f"{claim.gpu}={claim.ratio:g}x {claim.reference}",
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        reference_id=reference.id,
        reference_name=reference.name,
        claimed_ratio=claim.ratio,
        workload=workload.name,
        batch_size=batch,
        unit=workload.epoch_unit,
        verdict=verdict,
        overall=overall,
        holds_under=holds,
        band={"low": band.low, "high": band.high, "label": band.label},
        settings=judged,
        assumptions=assumptions,
        sources=[f"{g.name}: {g.source}" for g in (gpu, reference)],
    )


def _profile(
    workload: str, dims: dict[str, int], batch: int, precision: str, catalog: Catalog
) -> Profile:
    """The step's shipped or cached profile: ``audit`` never traces (that needs TensorFlow),
    and refuses, as ``predict`` does, a step no catalog GPU could hold."""
    from gpuscout.core.limits import check_fits_a_gpu
    from gpuscout.predict.profile import cached

    check_fits_a_gpu(workload, dims, batch, precision, "train", catalog)
    found = cached(workload, dims, batch, precision)
    if found is None:
        length = f" --seq-len {dims['seq_len']}" if "seq_len" in dims else ""
        raise UserError(
            f"no cost profile of {workload} at these sizes ({precision}) is shipped or cached, "
            "and audit does not trace steps.",
            f"run 'gpuscout predict --workload {workload} --batch-size {batch}{length} "
            f"--precision {precision}' once (it traces the step with TensorFlow and caches it), "
            "or use the workload's default sizes.",
        )
    return found


def _judge(
    claim: RelativeClaim,
    setting: Setting,
    pair: tuple[Gpu, Gpu],
    profile: Profile,
    model: Session,
    band: Band,
) -> Judged:
    """One setting: both GPUs predicted by the session, the ratio, its range and the notes
    (the predictor's, less those about several GPUs and ranking, which say nothing here)."""
    from gpuscout.core.run_settings import tf32_prediction_note

    out = Judged(setting.name, setting.meaning, setting.precision, setting.tf32, "skipped")
    if setting.precision.startswith("mixed"):  # as predict refuses to: not a choice anyone makes
        bf16 = setting.precision == "mixed_bfloat16"
        rate = "bf16_tensor_tflops" if bf16 else "fp16_tensor_fp32acc_tflops"
        lacking = [g.id for g in pair if not getattr(g, rate)]  # none, or not known
        if lacking:
            have = "has" if len(lacking) == 1 else "have"
            kind = "BF16" if bf16 else "FP16"
            out.reason = f"skipped: {' and '.join(lacking)} {have} no {kind} tensor cores"
            return out
    reference = pair[1]
    rows, notes = model.predict(profile, list(pair), [1], reference=reference, tf32=setting.tf32)
    ratio = rows[0].samples_per_second / rows[1].samples_per_second
    out.ratio, out.low, out.high = ratio, ratio * band.low, ratio * band.high
    out.samples_per_second = {r.gpu: r.samples_per_second for r in rows}
    inside = out.low <= claim.ratio <= out.high
    out.verdict = "holds within range" if inside else "outside range"
    side = "within" if inside else ("above" if claim.ratio > out.high else "below")
    out.reason = f"claimed {claim.ratio:g}x is {side} the range {out.low:.2f}-{out.high:.2f}x"
    out.fits_memory = {r.gpu: r.fits_memory for r in rows}
    for r in rows:
        if not r.fits_memory:
            out.notes.append(
                f"{r.gpu} does not hold batch {profile.batch} in {setting.precision} "
                f"({r.memory_needed_gb:.1f} GB needed): a ratio at a batch it cannot run "
                "(lower --batch-size)"
            )
        if r.measured is not None:
            out.notes.append(f"your stored runs measured {r.gpu} at {r.measured:,.0f}/s here")
    tf32_note = tf32_prediction_note(setting.precision, setting.tf32)
    if setting.precision == "fp32" and setting.tf32 and not any(g.tf32_tensor_tflops for g in pair):
        tf32_note = "neither GPU has TF32 tensor cores: the same as fp32 without TF32"
    for note in notes:
        if note.startswith("range x"):  # the absolute band: the speeds', not the ratio's
            out.notes.append(f"each GPU's predicted speed (not the ratio): {note}")
        elif not note.startswith(("several GPUs", "not distinguishable")):
            out.notes.append(note)
    out.notes += [tf32_note] if tf32_note else []
    out.notes += sorted({a for r in rows for a in r.assumptions})
    return out


def _common_notes(judged: list[Judged]) -> list[str]:
    """Notes every judged setting shares, taken out of the settings' own notes (said once)."""
    done = [j for j in judged if j.verdict != "skipped"]
    common = [n for n in done[0].notes if all(n in j.notes for j in done[1:])] if done else []
    for j in done:
        j.notes = [n for n in j.notes if n not in common]
    return common


def _overall(ratio: float, judged: list[Judged], holds: list[str]) -> tuple[OverallVerdict, str]:
    """The verdict over the settings, and the line that says under which it can hold, which
    it cannot, and which setting's prediction is closest to the claim."""
    done = [j for j in judged if j.ratio is not None]

    def figures(j: Judged) -> str:
        return f"{j.setting} ({j.ratio:.2f}x, range {j.low:.2f}-{j.high:.2f}x)"

    def listed(items: list[str]) -> str:
        return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"

    inside = [figures(j) for j in done if j.setting in holds]
    outside = [figures(j) for j in done if j.setting not in holds]
    closest = min(done, key=lambda j: abs(math.log(ratio / (j.ratio or 1.0))))
    nearest = f"closest prediction: {closest.setting}, {closest.ratio:.2f}x"
    if not outside:
        return "holds", f"{ratio:g}x can hold in every setting: {listed(inside)}; {nearest}"
    if inside:
        only = "only " if len(inside) == 1 else ""
        return "depends on setting", (
            f"{ratio:g}x can hold {only}in {listed(inside)}; not in {listed(outside)}; {nearest}"
        )
    return "outside range", f"{ratio:g}x holds in no setting: {listed(outside)}; {nearest}"
