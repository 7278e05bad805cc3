"""The rows of the catalog, validated: one pydantic model per data file.

Cells are read as CSV text. An empty cell means *unknown*; ``none`` in a number column means
the hardware *lacks* the feature (stored as 0: no TF32 tensor cores, no NVLink, no MIG). The two
must stay apart: an unknown FP8 rate is not a missing FP8 unit.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Rate = Annotated[float | None, Field(ge=0)]
Count = Annotated[int | None, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
Text = Annotated[str, Field(min_length=1)]

# Of a GPU's memory, the share tensors can use (the rest: CUDA context, cuDNN workspaces,
# allocator fragmentation). One figure for every memory check: advise, memory and predict.
MEMORY_HEADROOM = 0.9

# Board power assumed for a GPU whose row gives none (only a user's row can lack it: every
# shipped row has its tdp_w), for the energy figures of costs. Printed wherever it is used.
ASSUMED_TDP_W = 300.0

_PARTIAL_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")

TENSOR_RATES = (
    "fp64_tflops",
    "fp64_tensor_tflops",
    "fp32_tflops",
    "tf32_tensor_tflops",
    "fp16_tensor_fp32acc_tflops",
    "fp16_tensor_fp16acc_tflops",
    "bf16_tensor_tflops",
    "fp8_tensor_tflops",
    "fp4_tensor_tflops",
)


def _partial_date(value: str | None) -> str | None:
    if value is not None and not _PARTIAL_DATE.match(value):
        raise ValueError("must be a date written YYYY-MM-DD or YYYY-MM")
    return value


class _Row(BaseModel):
    # allow_inf_nan=False: 'inf' and 'nan' parse as floats, and an infinite tensor rate passed
    # every other check (issue 17); no catalog number is infinite.
    model_config = ConfigDict(
        frozen=True, extra="forbid", str_strip_whitespace=True, allow_inf_nan=False
    )

    @model_validator(mode="before")
    @classmethod
    def _cells(cls, data: Any) -> Any:
        """Empty cells are unknown; 'none' in a number column is an absent feature (0)."""
        if not isinstance(data, dict):
            return data
        out = {}
        for key, value in data.items():
            if isinstance(value, str):
                value = value.strip()
                if value == "":
                    value = None
                elif value.lower() == "none" and key in cls._none_is_zero():
                    value = 0
            out[key] = value
        return out

    @classmethod
    def _none_is_zero(cls) -> frozenset[str]:
        return frozenset()


class Gpu(_Row):
    """One GPU model. Tensor rates are dense TFLOP/s (2:4-sparse headlines are twice these)."""

    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    name: Text
    aliases: tuple[str, ...] = ()
    market: Literal["consumer", "datacenter", "workstation"]
    architecture: Text
    chip: Text
    form_factor: Text
    compute_capability: Annotated[str, Field(pattern=r"^\d+\.\d+$")]
    sm_count: Count = None
    cuda_cores: Count = None
    boost_clock_mhz: Rate = None
    # Why: a kernel whose working set fits in L2 is not bound by DRAM bandwidth; the per-kernel
    # model needs the size (RTX 4090 72 MB, A100 40 MB, T4 4 MB). MB = 2**20 bytes, as NVIDIA's
    # whitepapers count it (A100: 40 MB = 40,960 KB).
    l2_cache_mb: Annotated[float | None, Field(gt=0)] = None
    fp64_tflops: Rate = None
    fp64_tensor_tflops: Rate = None
    fp32_tflops: Positive
    tf32_tensor_tflops: Rate = None
    fp16_tensor_fp32acc_tflops: Rate = None
    fp16_tensor_fp16acc_tflops: Rate = None
    bf16_tensor_tflops: Rate = None
    fp8_tensor_tflops: Rate = None
    fp4_tensor_tflops: Rate = None
    sparsity_2to4: bool | None = None
    memory_gb: Positive
    memory_type: Text
    memory_bandwidth_gb_per_s: Positive
    nvlink_gb_per_s_per_direction: Rate = None
    nvlink_gb_per_s_total: Rate = None
    nvlink_max_gpus: Count = None
    pcie_gen: Annotated[int | None, Field(ge=1, le=7)] = None
    pcie_lanes: Annotated[int | None, Field(ge=1, le=32)] = None
    ecc: bool | None = None
    mig_max_instances: Count = None
    tdp_w: Annotated[float | None, Field(gt=0)] = None
    launch_date: str | None = None
    launch_price_usd: Annotated[float | None, Field(gt=0)] = None
    notes: str = ""
    source: Text
    retrieved_on: dt.date

    @classmethod
    def _none_is_zero(cls) -> frozenset[str]:
        return frozenset(
            (
                *TENSOR_RATES,
                "nvlink_gb_per_s_per_direction",
                "nvlink_gb_per_s_total",
                "nvlink_max_gpus",
                "mig_max_instances",
            )
        )

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(a.strip() for a in value.split(";") if a.strip())
        return value

    @field_validator("notes", mode="before")
    @classmethod
    def _no_notes(cls, value: Any) -> Any:
        return "" if value is None else value

    _launch = field_validator("launch_date")(_partial_date)

    @model_validator(mode="after")
    def _physics(self) -> Gpu:
        acc32, acc16 = self.fp16_tensor_fp32acc_tflops, self.fp16_tensor_fp16acc_tflops
        if acc32 is not None and acc16 is not None and acc32 > acc16 * 1.001:
            raise ValueError(
                "fp16_tensor_fp32acc_tflops is above fp16_tensor_fp16acc_tflops; FP32 "
                "accumulate is never faster (the two columns may be swapped)"
            )
        per_dir, total = self.nvlink_gb_per_s_per_direction, self.nvlink_gb_per_s_total
        if per_dir is not None and total is not None and not math.isclose(total, 2 * per_dir):
            raise ValueError("nvlink_gb_per_s_total must be twice nvlink_gb_per_s_per_direction")
        return self

    def to_csv_row(self) -> dict[str, str]:
        """The row as catalog CSV cells (the inverse of loading): for copying and editing."""
        zero_is_none = self._none_is_zero()
        out: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is None:
                out[name] = ""
            elif isinstance(value, bool):
                out[name] = "yes" if value else "no"
            elif isinstance(value, tuple):
                out[name] = ";".join(value)
            elif value == 0 and name in zero_is_none:
                out[name] = "none"
            else:
                out[name] = str(value)
        return out

    def has(self, feature: str) -> bool:
        """Whether the GPU is known to have a feature (unknown counts as no)."""
        rate = {
            "tf32": self.tf32_tensor_tflops,
            "bf16": self.bf16_tensor_tflops,
            "fp8": self.fp8_tensor_tflops,
            "fp4": self.fp4_tensor_tflops,
            "nvlink": self.nvlink_gb_per_s_total,
            "mig": self.mig_max_instances,
        }
        if feature in rate:
            return bool(rate[feature])
        if feature == "ecc":
            return bool(self.ecc)
        if feature == "sparsity":
            return bool(self.sparsity_2to4)
        raise KeyError(feature)

    def board_power_w(self) -> tuple[float, str | None]:
        """Watts for the energy a job uses, and the assumption to print when the row has no
        ``tdp_w`` (None when it has one)."""
        if self.tdp_w:
            return self.tdp_w, None
        return ASSUMED_TDP_W, (
            f"{self.id}: no board power (tdp_w) in its catalog row: {ASSUMED_TDP_W:g} W assumed "
            "for the energy figures"
        )


FEATURES = ("bf16", "ecc", "fp4", "fp8", "mig", "nvlink", "sparsity", "tf32")

PriceKind = Literal["on_demand", "spot", "purchase_new", "purchase_used"]


class Price(_Row):
    """A price seen for a GPU: per GPU-hour in a cloud, or per GPU to buy."""

    gpu_id: Text
    provider: Text
    kind: PriceKind
    instance_type: str | None = None
    gpus_per_instance: Annotated[int, Field(ge=1)] = 1
    # where the provider sells any count at this per-GPU rate, in one instance (a RunPod pod
    # takes a GPU count): the most it holds; None: instances of exactly gpus_per_instance
    max_gpus_per_instance: Annotated[int | None, Field(ge=1)] = None
    region: str | None = None
    usd_per_gpu_hour: Annotated[float | None, Field(gt=0)] = None
    usd_per_gpu: Annotated[float | None, Field(gt=0)] = None
    observed_on: str | None = None
    notes: str | None = None
    source: Text
    retrieved_on: dt.date

    _observed = field_validator("observed_on")(_partial_date)

    def age_days(self, today: dt.date | None = None) -> int | None:
        """Days since the price was seen (a month-only date counts from the 1st), if known.

        Never negative: dates are written as their author's calendar day, and west of UTC a
        price seen today (in UTC) is a day ahead of the local date; a date further ahead is
        refused when the file is read (``files.check_dates``, a day of clock skew allowed)."""
        if self.observed_on is None:
            return None
        seen = dt.date.fromisoformat(
            self.observed_on if len(self.observed_on) == 10 else (f"{self.observed_on}-01")
        )
        return max(0, ((today or dt.date.today()) - seen).days)

    def observed_text(self, today: dt.date | None = None) -> str:
        """'2026-05-16 (205 days ago)', '... (1 day ago)', '... (today)', or 'not dated'."""
        age = self.age_days(today)
        if age is None:
            return "not dated"
        ago = "today" if age == 0 else f"{age:,} day{'s' * (age != 1)} ago"
        return f"{self.observed_on} ({ago})"

    @model_validator(mode="after")
    def _sizes(self) -> Price:
        top = self.max_gpus_per_instance
        if top is not None and top < self.gpus_per_instance:
            raise ValueError(f"max_gpus_per_instance {top} is below gpus_per_instance "
                             f"{self.gpus_per_instance}")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _unit_fits_kind(self) -> Price:
        hourly = self.kind in ("on_demand", "spot")
        if hourly and self.usd_per_gpu_hour is None:
            raise ValueError(f"a {self.kind} price needs usd_per_gpu_hour")
        if not hourly and self.usd_per_gpu is None:
            raise ValueError(f"a {self.kind} price needs usd_per_gpu")
        if self.usd_per_gpu_hour is not None and self.usd_per_gpu is not None:
            raise ValueError("give usd_per_gpu_hour (cloud) or usd_per_gpu (purchase), not both")
        return self


class Published(_Row):
    """A published training-throughput measurement (for bounds, calibration, comparisons)."""

    source_id: Text
    source: Text
    framework: Text
    software: str | None = None
    workload: Text
    seq_len: Count = None
    precision: Literal["fp32", "mixed_float16", "mixed_bfloat16"]
    gpu: Text
    gpu_id: Text
    gpu_count: Annotated[int, Field(ge=1)]
    batch_size_per_gpu: Count = None
    throughput: Positive
    unit: Text
    note: str | None = None
    retrieved_on: dt.date


class Busbw(_Row):
    """A measured NCCL bus bandwidth (nccl-tests' ``busbw``) of GPUs in one machine, which the
    data-parallel scaling model uses instead of a share of the link's line rate."""

    gpu_id: Text
    link: Literal["nvlink", "pcie"]
    gpu_count: Annotated[int, Field(ge=2)]  # GPUs in the measurement
    collective: Literal["all_reduce"]
    busbw_gb_per_s: Positive
    note: str | None = None
    source: Text
    retrieved_on: dt.date
