"""Auditing a speed claim: can the GPU physically do the arithmetic the claim implies?

Implied throughput x training FLOPs per sample = implied FLOP/s. Above the GPU's dense peak for
the precision the claim is impossible; above the best MFU ever published for that kind of
workload and precision, or :data:`BEST_ON_GPU_FACTOR` times the best result published on the
same GPU and workload, it is implausible; otherwise plausible (which does not make it true).

A claim that does not state its precision is judged at the precision under which it is most
plausible (its MFU against that precision's published bound), and says which. Judging it
against the fastest peak with the loosest bound of any precision, as before, mixed a V100 FP32
efficiency (68 % MFU) with the A100's tensor peak and called 8,000 images/s of ResNet-50 on
one A100 plausible, 3.9x the best published result on it (issue 17).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.audit.flops import workload_flops
from gpuscout.audit.gpus import claim_gpus
from gpuscout.audit.published import best_mfu, best_on_gpu
from gpuscout.audit.verdict import ClaimVerdict
from gpuscout.catalog import Catalog, Gpu, peak_tflops
from gpuscout.core.errors import UserError

# A claim this many times the best per-GPU result published for the same GPU and workload (any
# precision, when the claim states none) is at least implausible. Why 2x: published results
# for one GPU and workload spread by about 1.5x across frameworks and software years (A100 40GB
# ResNet-50 mixed precision in the catalog: 1,396 to 2,075 images/s); MLPerf-tuned
# submissions run about 1.3-1.5x above such results. Twice the best leaves that room and still
# catches claims several times any known result.
BEST_ON_GPU_FACTOR = 2.0
# Precisions tried for a claim that states none, in the order preferred on a tie.
_GUESSES = ("mixed_float16", "mixed_bfloat16", "fp32")


@dataclass(frozen=True)
class SpeedClaim:
    gpu: str
    workload: str
    precision: str | None = None  # None: not stated, judged at the most plausible one
    epoch_seconds: float | None = None
    samples_per_second: float | None = None
    epoch_samples: int | None = None
    gpus: int = 1
    seq_len: int | None = None
    label: str | None = None


def _likely_precision(gpu: Gpu, workload: str, tflops: float, catalog: Catalog) -> tuple[str, str]:
    """The precision under which an unstated-precision claim is most plausible: the lowest MFU
    against that precision's published bound (or the lowest MFU, without published results),
    and the assumption that says so, with the figures of each precision tried."""
    tried = []
    for precision in _GUESSES:
        peak, _ = peak_tflops(gpu, precision)
        bound = best_mfu(catalog, workload, precision)
        mfu = tflops / peak
        tried.append((mfu / bound.mfu if bound else mfu, precision, mfu, bound))
    _, chosen, _, _ = min(tried, key=lambda t: t[0])  # min keeps the first of equals
    figures = "; ".join(
        f"{p}: {mfu:.0%} MFU" + (f" vs {bound.mfu:.0%} best published" if bound else "")
        for _, p, mfu, bound in tried
    )
    return chosen, (
        f"precision not stated: judged as {chosen}, the precision under which the claim is "
        f"most plausible ({figures})"
    )


def audit_speed(claim: SpeedClaim, catalog: Catalog) -> ClaimVerdict:
    """The verdict on one speed claim, with every number and assumption behind it."""
    if (claim.epoch_seconds is None) == (claim.samples_per_second is None):
        raise UserError(
            "a speed claim needs exactly one of epoch seconds or samples per second.",
            "give --epoch-seconds or --samples-per-second.",
        )
    gpus, notes = claim_gpus(catalog, claim.gpu)
    verdicts = [_audit_on(gpu, claim, catalog, list(notes)) for gpu in gpus]
    return min(verdicts, key=lambda v: float(v.numbers["implied_mfu"] or 0.0))


def _audit_on(
    gpu: Gpu, claim: SpeedClaim, catalog: Catalog, assumptions: list[str]
) -> ClaimVerdict:
    work = workload_flops(claim.workload, claim.seq_len)
    unit = work.epoch_unit
    if claim.samples_per_second is not None:
        total = claim.samples_per_second
        stated = f"{total:,.0f} {unit}/s"
    else:
        assert claim.epoch_seconds is not None
        epoch = claim.epoch_samples or work.epoch_samples
        total = epoch / claim.epoch_seconds
        stated = f"{claim.epoch_seconds:g} s per epoch"
        assumptions.append(
            f"epoch = {epoch:,} {unit}"
            + ("" if claim.epoch_samples else f" (the {work.name} workload's standard epoch)")
        )
    per_gpu = total / claim.gpus
    if claim.gpus > 1:
        assumptions.append(f"{claim.gpus} GPUs sharing the work evenly (perfect scaling)")
    tflops = per_gpu * work.flops_per_sample / 1e12
    precision = claim.precision
    if precision is None:
        precision, assumed = _likely_precision(gpu, claim.workload, tflops, catalog)
        assumptions.append(assumed)
    peak, rate = peak_tflops(gpu, precision)
    assumptions.append(f"{work.flops_per_sample / 1e9:.2f} GFLOP per training sample ({work.note})")
    mfu = tflops / peak
    stated_precision = claim.precision or "precision not stated"
    label = claim.label or f"{gpu.name}, {claim.workload}, {stated_precision}: {stated}"
    out = ClaimVerdict(
        kind="speed",
        claim=label,
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        verdict="plausible",
        numbers={
            "claimed_samples_per_second": round(total, 1),
            "implied_samples_per_second_per_gpu": round(per_gpu, 1),
            "flops_per_sample": work.flops_per_sample,
            "implied_tflops_per_gpu": round(tflops, 1),
            "peak_tflops": peak,
            "peak_rate": rate,
            "implied_mfu": round(mfu, 4),
            "precision": precision,
        },
        assumptions=assumptions,
        sources=[f"{gpu.name}: {gpu.source}"],
    )
    if mfu > 1:
        out.verdict = "impossible"
        out.reasons.append(
            f"needs {tflops:,.0f} TFLOP/s per GPU, {mfu:.1f}x the {peak:g} TFLOP/s peak "
            f"({rate}): no GPU computes faster than its peak"
        )
    bound = best_mfu(catalog, claim.workload, precision)
    if bound is not None:
        out.numbers["best_published_mfu"] = round(bound.mfu, 4)
        out.sources.append(f"best published MFU {bound.describe()}")
        if out.verdict == "plausible" and mfu > bound.mfu:
            out.verdict = "implausible"
            out.reasons.append(
                f"implies {mfu:.0%} MFU, above the best published for this kind of workload "
                f"({bound.mfu:.0%})"
            )
    else:
        out.reasons.append("no published results for this workload, so no plausibility bound")
    best = best_on_gpu(catalog, gpu.id, claim.workload, claim.precision)
    if best is not None:
        best_per_gpu = best.throughput / best.gpu_count
        out.numbers["best_published_on_gpu"] = round(best_per_gpu, 1)
        times = per_gpu / best_per_gpu
        out.reasons.append(
            f"{times:.1f}x the best published result on this GPU "
            f"({best_per_gpu:,.0f} {best.unit} per GPU, {best.precision}, {best.source})"
        )
        if out.verdict == "plausible" and times >= BEST_ON_GPU_FACTOR:
            out.verdict = "implausible"
            out.reasons.insert(
                0,
                f"{times:.1f}x the best result published on this GPU for this workload: "
                f"{BEST_ON_GPU_FACTOR:g}x or more is implausible",
            )
    if out.verdict == "plausible":
        out.reasons.insert(0, f"implies {mfu:.0%} MFU, within what the GPU can do")
    return out
