"""Auditing a spec claim ("A100 FP32 = 9.7 TFLOPS") against the catalog, and naming the mix-up.

A contradicted number is compared with the GPU's other figures (FP64, sparse headlines, the
other accumulate rate) and with the same figure of the other GPUs: published mistakes are
almost always a real number put in the wrong place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuscout.audit.gpus import claim_gpus
from gpuscout.audit.verdict import ClaimVerdict
from gpuscout.catalog import FEATURES, Catalog, Gpu
from gpuscout.core.errors import UserError, did_you_mean

TOLERANCE = 0.03  # datasheets round; 3 % separates rounding from a different figure

LABELS = {
    "fp64_tflops": "FP64",
    "fp64_tensor_tflops": "FP64 tensor",
    "fp32_tflops": "FP32",
    "tf32_tensor_tflops": "TF32 tensor",
    "fp16_tensor_fp32acc_tflops": "FP16 tensor with FP32 accumulate",
    "fp16_tensor_fp16acc_tflops": "FP16 tensor with FP16 accumulate",
    "bf16_tensor_tflops": "BF16 tensor",
    "fp8_tensor_tflops": "FP8 tensor",
    "fp4_tensor_tflops": "FP4 tensor",
    "memory_gb": "memory (GB)",
    "memory_bandwidth_gb_per_s": "memory bandwidth (GB/s)",
    "nvlink_gb_per_s_total": "NVLink total (GB/s)",
    "nvlink_gb_per_s_per_direction": "NVLink per direction (GB/s)",
    "sm_count": "SM count",
    "cuda_cores": "CUDA cores",
    "boost_clock_mhz": "boost clock (MHz)",
    "l2_cache_mb": "L2 cache (MB)",
    "tdp_w": "TDP (W)",
    "mig_max_instances": "MIG instances",
    "launch_price_usd": "launch price (USD)",
}
TENSOR = {k for k in LABELS if "tensor" in k}
# Friendly names a claim may use -> the catalog columns that figure could mean.
ALIASES: dict[str, tuple[str, ...]] = {
    "fp64": ("fp64_tflops", "fp64_tensor_tflops"),
    "fp32": ("fp32_tflops",),
    "tf32": ("tf32_tensor_tflops",),
    "fp16": ("fp16_tensor_fp32acc_tflops", "fp16_tensor_fp16acc_tflops"),
    "bf16": ("bf16_tensor_tflops",),
    "fp8": ("fp8_tensor_tflops",),
    "fp4": ("fp4_tensor_tflops",),
    "memory": ("memory_gb",),
    "vram": ("memory_gb",),
    "bandwidth": ("memory_bandwidth_gb_per_s",),
    "memory_bandwidth": ("memory_bandwidth_gb_per_s",),
    "nvlink": ("nvlink_gb_per_s_total", "nvlink_gb_per_s_per_direction"),
    "sms": ("sm_count",),
    "sm": ("sm_count",),
    "l2": ("l2_cache_mb",),
    "tdp": ("tdp_w",),
    "mig": ("mig_max_instances",),
    "price": ("launch_price_usd",),
}
_YES, _NO = {"yes", "true", "y"}, {"no", "false", "n", "none"}


@dataclass(frozen=True)
class SpecClaim:
    gpu: str
    field: str
    value: str
    label: str | None = None


def parse_spec(text: str) -> tuple[str, str]:
    """'fp32_tflops=9.7' -> ('fp32_tflops', '9.7')."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise UserError(f"spec claim '{text}' is not FIELD=VALUE.", "write e.g. fp32_tflops=9.7.")
    return name.strip().lower(), value.strip()


def columns_for(field: str) -> tuple[str, ...]:
    if field in LABELS:
        return (field,)
    key = field.removesuffix("_tflops").removesuffix("_tensor")
    if key in ALIASES:
        return ALIASES[key]
    names = sorted({*LABELS, *ALIASES})
    raise UserError(
        f"unknown spec field '{field}'.{did_you_mean(field, names)}",
        f"use a catalog column or one of: {', '.join(sorted(ALIASES))}.",
    )


_RANK = {"confirmed": 0, "unverifiable": 1, "contradicted": 2}


def audit_spec(claim: SpecClaim, catalog: Catalog) -> ClaimVerdict:
    """Confirmed, contradicted (with the catalog value, its source and the likely mix-up)."""
    gpus, notes = claim_gpus(catalog, claim.gpu)
    verdicts = [_audit_on(gpu, claim, catalog, list(notes)) for gpu in gpus]
    return min(verdicts, key=lambda v: _RANK[v.verdict])


def _audit_on(gpu: Gpu, claim: SpecClaim, catalog: Catalog, assumptions: list[str]) -> ClaimVerdict:
    out = ClaimVerdict(
        kind="spec",
        claim=claim.label or f"{gpu.name}: {claim.field} = {claim.value}",
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        verdict="unverifiable",
        assumptions=assumptions,
        sources=[f"{gpu.name}: {gpu.source}"],
    )
    answer = claim.value.lower()
    if claim.field in FEATURES and (answer in _YES or answer in _NO):
        return _feature(out, gpu, claim.field, answer in _YES)
    columns = columns_for(claim.field)
    value = _number(claim, columns[0])
    known = {c: getattr(gpu, c) for c in columns if getattr(gpu, c) is not None}
    out.numbers = {"claimed": value, **{c: v for c, v in known.items()}}
    if not known:
        out.reasons.append(f"the catalog has no {LABELS[columns[0]]} figure for {gpu.name}")
        return out
    for column, actual in known.items():
        if _close(value, actual):
            out.verdict = "confirmed"
            out.reasons.append(f"matches {LABELS[column]} = {actual:g}")
            return out
    out.verdict = "contradicted"
    shown = "; ".join(f"{LABELS[c]} = {v:g}" for c, v in known.items())
    out.reasons.append(f"the catalog says {shown}")
    mixups = list(_mixups(value, gpu, columns, catalog))
    if mixups:
        out.reasons.append("likely confusion: the claimed value is " + "; or ".join(mixups[:3]))
    return out


def _feature(out: ClaimVerdict, gpu: Gpu, feature: str, claimed: bool) -> ClaimVerdict:
    has = gpu.has(feature)
    out.numbers = {"claimed": "yes" if claimed else "no", "catalog": "yes" if has else "no"}
    out.verdict = "confirmed" if has == claimed else "contradicted"
    detail = {
        "tf32": gpu.tf32_tensor_tflops,
        "bf16": gpu.bf16_tensor_tflops,
        "fp8": gpu.fp8_tensor_tflops,
        "nvlink": gpu.nvlink_gb_per_s_total,
    }.get(feature)
    extra = f" ({detail:g} {'GB/s' if feature == 'nvlink' else 'TFLOPS dense'})" if detail else ""
    out.reasons.append(f"{gpu.name} {'has' if has else 'does not have'} {feature}{extra}")
    return out


# Units a claim may carry, per kind of column: unit -> factor to the column's unit.
_UNITS: dict[str, dict[str, float]] = {
    "_tflops": {"tflops": 1, "tflop/s": 1, "tf": 1, "pflops": 1000, "pflop/s": 1000},
    "_gb_per_s": {"gb/s": 1, "tb/s": 1000},
    "memory_gb": {"gb": 1},
    "tdp_w": {"w": 1},
    "boost_clock_mhz": {"mhz": 1, "ghz": 1000},
    "l2_cache_mb": {"mb": 1, "kb": 1 / 1024},
    "launch_price_usd": {"usd": 1, "$": 1},
}
_NUMBER = re.compile(r"^[~≈]?\s*(\$?)\s*(-?[0-9][0-9,]*\.?[0-9]*)\s*([a-z/$]*)$")


def _number(claim: SpecClaim, column: str) -> float:
    """The claimed number in the column's unit; '1.55 TB/s', '~1000 TFLOPS', '$1,599' work."""
    match = _NUMBER.match(claim.value.strip().lower())
    if match is None:
        raise UserError(
            f"spec claim {claim.field}={claim.value}: '{claim.value}' is not a number.",
            "give a number (units as in the field name), or yes/no for a feature.",
        )
    dollar, digits, unit = match.groups()
    value = float(digits.replace(",", ""))
    unit = unit or dollar
    if unit:
        units = next((u for k, u in _UNITS.items() if column.endswith(k)), {})
        if unit not in units:
            raise UserError(
                f"spec claim {claim.field}={claim.value}: unit '{unit}' does not fit {column}.",
                f"use {', '.join(units) or 'no unit'}.",
            )
        value *= units[unit]
    if not (math.isfinite(value) and value > 0):  # 400 digits parse as infinity
        raise UserError(
            f"spec claim {claim.field}={claim.value}: the value must be a positive, finite "
            f"number, got {claim.value}.",
            "give the figure as published, e.g. fp32_tflops=19.5.",
        )
    return value


def _close(a: float, b: float) -> bool:
    return b > 0 and abs(a - b) <= TOLERANCE * b


def _mixups(value: float, gpu: Gpu, columns: tuple[str, ...], catalog: Catalog) -> Iterator[str]:
    for column, label in LABELS.items():
        actual = getattr(gpu, column)
        if not actual:
            continue
        if column not in columns and _close(value, actual):
            yield f"{gpu.name}'s {label} ({actual:g})"
        if column in TENSOR and gpu.sparsity_2to4 and _close(value, 2 * actual):
            yield f"{gpu.name}'s {label} with 2:4 sparsity ({2 * actual:g}; dense is {actual:g})"
    for other in catalog.gpus.values():
        if other.id == gpu.id:
            continue
        for column in columns:
            actual = getattr(other, column)
            if actual and _close(value, actual):
                yield f"the {other.name}'s {LABELS[column]} ({actual:g})"
                break
