"""Fitting what kernels cannot know to published end-to-end training rows (scipy).

The kernel model (``kernel_model.py``) is learned from measured FP32 kernels; it cannot know the
share of the tensor-core peak a GEMM reaches, the framework's cost per step, or how much faster
one software stack's kernels are than another's. Those are fitted here, to the catalog's
published single-GPU rows, each modelled at its own batch size:

    step = sum of kernels(tensor shares, power, traffic[source's software]) + step cost

by least squares on log(modelled / measured). Every published source is one software stack
(framework + version) and gets its own traffic factor: how many more bytes than XLA's fused
HLO its kernels move (PyTorch eager runs a batch norm and its ReLU as two kernels), bounded to
x0.67..x1.5 and pulled towards 1; it scales bytes, never time, so no kernel beats its roofline.
A prediction uses the median factor of the ``--stack`` level's published stacks
(``stacks.py``); your stored GPU runs are not fitted to: they anchor (``anchoring.py``).
Launch and step costs are assumed (``data/overheads.csv``): no published row can identify
them. CUDA-core GEMMs keep the kernel model's utilisation, learned from measured
FP32 GEMMs on five GPUs, with their chip's measured factor (``KernelModel.cuda_gemm_factor``).

Ranges come from out-of-sample errors, never the fit's own: ``uncertainty.py`` picks them,
above this module and ``out_of_sample.py``. The points fitted are built in
``calibration_points.py``; nothing here imports a module above it (data -> kernel model ->
calibration -> session -> request, one direction).
"""

from __future__ import annotations

import csv
import functools
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gpuscout.catalog import Catalog
from gpuscout.predict import calibration_cache
from gpuscout.predict.calibration_points import Point, point_terms, published_points
from gpuscout.predict.efficiency import (
    POWER_EXPONENT,
    RHO_REF,
    TENSOR_KINDS,
    Efficiency,
    overheads,
)
from gpuscout.predict.roofline import combine
from gpuscout.predict.stacks import StackLevel

_TENSOR = (0.05, 1.0)  # a share of the tensor peak: 1 is the peak itself
_SCALING = (0.0, 1.0)  # 0: a tensor kernel gains nothing from more tensor FLOPs a clock
_POWER_W = (0.0, 10.0)  # watts per SM-GHz for full clocks (H100 SXM runs 261 SM-GHz on 700 W)
# A stack moves at most 1.5x the bytes of XLA's fused HLO, or a third fewer (fusing more than
# XLA does): a traffic factor, not a free speed factor.
_LOG_TRAFFIC = math.log(1.5)
_RIDGE = 0.05  # pulls traffic factors towards 1 where the data cannot tell
# fitted parameters before the traffic factors: 4 tensor shares, 2 scaling exponents, power
_FIXED = 7
# Tight tolerances and a fixed start: the fit lands on the same optimum to the printed digits on
# any CPU (Intel or AMD), whatever the last bits of its sums; the shipped rows converge in about
# 14 evaluations. The bound keeps a pathological user row cheap (a GPU row without board power
# took 326 Jacobians, 16 s, at 400).
_MAX_NFEV = 60
_TOL = 1e-12
_F_SCALE = 0.15  # soft-L1 loss: a row more than ~15 % off (a B200 run at 1.1x an H100) pulls less
# The fit's revision, part of the disk cache's key (``calibration_cache.py``): bump it when
# the fit's result changes for the same points, so no cached fit outlives the change.
FIT_REVISION = 2


@dataclass(frozen=True)
class Calibration:
    tensor: tuple[float, float, float, float]  # per roofline.TENSOR_KINDS
    stacks: dict[str, float]  # traffic factor per software stack
    scaling: tuple[float, float]
    power_w: float
    count: int  # points fitted
    # the points, made when first asked for (a shipped fit is used without them)
    source: Callable[[], Sequence[Point]] = field(compare=False, repr=False)

    @cached_property
    def points(self) -> tuple[Point, ...]:
        return tuple(self.source())

    @cached_property
    def log_errors(self) -> tuple[float, ...]:
        """In sample: log(modelled / measured) per point (never the range of a prediction)."""
        return tuple(math.log(modelled(self, p) / p.measured) for p in self.points)

    def to_json(self) -> dict[str, object]:
        return {"tensor": self.tensor, "scaling": self.scaling, "power_w": self.power_w,
                "stacks": self.stacks, "count": self.count}  # fmt: skip

    @classmethod
    def from_json(cls, raw: Any, source: Callable[[], Sequence[Point]]) -> Calibration:
        """A fit as ``to_json`` wrote it (the shipped file, a disk-cache entry), its points
        made by ``source`` when first asked for."""
        return cls(tensor=tuple(raw["tensor"]), stacks=dict(raw["stacks"]),
                   scaling=tuple(raw["scaling"]), power_w=raw["power_w"], count=raw["count"],
                   source=source)  # fmt: skip

    @property
    def stack(self) -> float:
        """The median of every fitted stack's traffic factor (``calibrate``'s summary)."""
        return statistics.median(self.stacks.values()) if self.stacks else 1.0

    def traffic(self, level: StackLevel) -> tuple[float, str]:
        """The traffic factor of a ``--stack`` level: the median of its published stacks'
        factors in this fit, and where it came from (a fit without any of them, from a
        catalog of yours without their rows, takes every stack's median, said)."""
        mine = [self.stacks[s] for s in level.stacks if s in self.stacks]
        if not mine:
            return self.stack, (
                f"every fitted stack's median: none of the {level.name} level's stacks is fitted"
            )
        many = "s" * (len(mine) != 1)
        return statistics.median(
            mine
        ), f"the {level.name} level ({len(mine)} published stack{many})"

    def _efficiency(self, traffic: float) -> Efficiency:
        cost = overheads()
        return Efficiency(self.tensor, cost["train_step_s"].value, cost["launch_s"].value,
                          traffic, self.scaling, self.power_w,
                          cost["forward_call_s"].value)  # fmt: skip

    @property
    def efficiency(self) -> Efficiency:
        return self._efficiency(self.stack)

    def efficiency_for(self, level: StackLevel, precision: str = "fp32") -> Efficiency:
        """What a prediction for software of ``level`` in ``precision`` uses: its traffic
        factor, and the transposes of NCHW convolutions where every stack of the level runs
        this precision's convolutions on NCHW tensors (``data/conv_layouts.csv``)."""
        nchw = bool(level.stacks) and all(relayout(s, precision) for s in level.stacks)
        return replace(self._efficiency(self.traffic(level)[0]), relayout=float(nchw))

    def for_point(self, p: Point) -> Efficiency:
        eff = self._efficiency(self.stacks.get(p.stack, self.stack))
        return replace(eff, relayout=relayout(p.stack, p.profile.precision))

    def describe(self, level: StackLevel | None = None) -> str:
        """The fit in one line, with the traffic factor of ``level`` (None: every stack's
        median)."""
        traffic, whose = (
            (self.stack, "every fitted stack's median") if level is None else self.traffic(level)
        )
        shares = ", ".join(f"{kind} {share:.0%}" for kind, share in
                           zip(TENSOR_KINDS, self.tensor, strict=True))  # fmt: skip
        cost = overheads()
        return (
            f"per-kernel model fitted to {self.count} published measurements: tensor-core "
            f"kernels at these shares of their peak, in full tiles: {shares} (at "
            f"{RHO_REF:.0f} tensor FLOPs per SM a clock; x(rho/{RHO_REF:.0f})^"
            f"{self.scaling[0]:.2f} for matmuls, ^{self.scaling[1]:.2f} for convolutions, at "
            f"most the peak); CUDA-core GEMMs at the kernel model's utilisation (measured FP32 "
            f"GEMMs), and a tensor-core GEMM on CUDA cores where that is faster (the autotuner "
            f"picks the faster algorithm); full clocks under compute load need "
            f"{self.power_w:.2f} W of board power "
            f"per SM-GHz (less: clocks x(power/need)^{POWER_EXPONENT:g}); DRAM traffic "
            f"x{traffic:.2f} the bytes counted on XLA's fused HLO ({whose}); "
            f"assumed, not fitted: {cost['launch_s'].value * 1e6:g} µs per kernel launch, "
            f"{cost['train_step_s'].value * 1e3:g} ms per training step, "
            f"{cost['forward_call_s'].value * 1e6:g} µs per forward call (data/overheads.csv)"
        )


_FITS: dict[object, Calibration] = {}


@functools.cache
def conv_layouts() -> dict[tuple[str, str], str]:
    """``data/conv_layouts.csv``: the layout a software stack runs its convolutions in, per
    precision, where its published configuration says (each row cites it). Any other stack
    and precision is taken as NHWC: the layout XLA assigns to the traced step, no transposes."""
    path = resources.files("gpuscout.predict") / "data" / "conv_layouts.csv"
    with path.open(encoding="utf-8") as f:
        return {(r["stack"], r["precision"]): r["conv_layout"] for r in csv.DictReader(f)}


def relayout(stack: str, precision: str) -> float:
    """1 where the stack runs this precision's convolutions on NCHW tensors (cuDNN transposes
    their operands and results), else 0."""
    return 1.0 if conv_layouts().get((stack, precision)) == "NCHW" else 0.0


@dataclass(frozen=True)
class _Design:
    """Every kernel of every point in flat arrays, so one evaluation of the fit is a handful of
    numpy operations (a fit takes tens of milliseconds, and the out-of-sample errors refit it
    once per GPU and per source)."""

    point: np.ndarray  # index of the point each kernel belongs to
    count: np.ndarray
    overlap: np.ndarray
    memory: np.ndarray
    compute: np.ndarray
    tensor: np.ndarray
    rho: np.ndarray  # per kernel: its units' FLOPs per SM per clock
    cap: np.ndarray  # per kernel: the most its share may be (its units' peak)
    cuda: np.ndarray  # per kernel: its CUDA-core alternative's compute seconds (inf: none)
    sm_ghz_per_w: np.ndarray  # per kernel: its GPU's SM-GHz per watt of board power
    relayout: np.ndarray  # per kernel: seconds of its stack's layout transposes (0: none)
    log_measured: np.ndarray  # per point: log samples/s
    batch: np.ndarray
    stack_index: np.ndarray
    stacks: tuple[str, ...]

    @classmethod
    def of(cls, points: Sequence[Point]) -> _Design:
        parts = [point_terms(p) for p in points]
        stacks = tuple(sorted({p.stack for p in points}))
        index = {s: i for i, s in enumerate(stacks)}
        return cls(
            point=np.concatenate([np.full(len(t.count), i) for i, t in enumerate(parts)]),
            count=np.concatenate([t.count for t in parts]),
            overlap=np.concatenate([t.overlap for t in parts]),
            memory=np.concatenate([t.memory for t in parts]),
            compute=np.concatenate([t.compute for t in parts]),
            tensor=np.concatenate([t.tensor for t in parts]),
            rho=np.concatenate([t.rho for t in parts]),
            cap=np.concatenate([t.cap for t in parts]),
            cuda=np.concatenate([t.cuda for t in parts]),
            sm_ghz_per_w=np.concatenate([np.full(len(t.count), t.sm_ghz_per_w) for t in parts]),
            relayout=np.concatenate(
                [
                    t.extra(replace(_LAUNCH, relayout=relayout(p.stack, p.profile.precision)))
                    for p, t in zip(points, parts, strict=True)
                ]
            ),
            log_measured=np.log([p.measured for p in points]),
            batch=np.array([p.profile.batch for p in points], dtype=float),
            stack_index=np.array([index[p.stack] for p in points]),
            stacks=stacks,
        )

    def without_choice(self) -> _Design:
        """The same points with every GEMM kept on the units its precision names (no
        CUDA-core alternative): the smooth problem a fit starts from."""
        return replace(self, cuda=np.full_like(self.cuda, np.inf))

    def log_speed(self, theta: np.ndarray) -> np.ndarray:
        """Per point: log samples/s, as ``roofline.Terms.seconds`` models it (a test holds the
        two to 1e-9), including the autotuner's choice of the faster of a GEMM's tensor-core
        and CUDA-core algorithms (``roofline.cuda_core_alternative``)."""
        eff = _efficiency(theta)
        cost = overheads()
        launch_s, step_s = cost["launch_s"].value, cost["train_step_s"].value
        traffic = np.exp(theta[_FIXED:])[self.stack_index][self.point]
        share = eff.share(np.maximum(self.tensor, 0), self.rho, self.cap)
        compute = np.where(self.tensor >= 0, self.compute / share, self.compute)
        compute = np.minimum(compute, self.cuda)
        power = np.maximum(1.0, eff.power_w * self.sm_ghz_per_w) ** POWER_EXPONENT
        compute = compute * np.where(self.sm_ghz_per_w > 0, power, 1.0)
        memory = self.memory * traffic
        per_kernel = self.count * (
            launch_s + combine(compute, memory, self.overlap) + self.relayout
        )
        kernels = np.bincount(self.point, weights=per_kernel, minlength=len(self.batch))
        seconds = kernels + step_s
        return np.asarray(np.log(self.batch / seconds), dtype=float)

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        errors = self.log_speed(theta) - self.log_measured
        return np.concatenate([errors, _RIDGE * theta[_FIXED:]])


_LAUNCH = Efficiency((1.0, 1.0, 1.0, 1.0), 0.0, overheads()["launch_s"].value)


def _efficiency(theta: np.ndarray) -> Efficiency:
    """The kernel-level factors of a parameter vector (traffic factors follow them)."""
    return Efficiency(
        tensor=(float(theta[0]), float(theta[1]), float(theta[2]), float(theta[3])),
        step_s=0.0,
        launch_s=0.0,
        scaling=(float(theta[4]), float(theta[5])),
        power_w=float(theta[6]),
    )


def fit_calibration(points: Sequence[Point], cached: bool = False) -> Calibration:
    """Least-squares tensor shares, their scaling with rho, the board power and the traffic
    factors of these points (the same points give the same fit: kept for the process).
    ``cached``: also kept on disk (``calibration_cache.py``), for the fit every command uses."""
    key = tuple((p.label, p.measured, p.profile.key, p.profile.method, p.gpu, p.stack, p.tf32)
                for p in points)  # fmt: skip
    if key not in _FITS:
        _FITS[key] = _cached_fit(points) if cached else _fit(points)
    return _FITS[key]


def _cached_fit(points: Sequence[Point]) -> Calibration:
    """The fit of ``points`` from the disk cache, else fitted and cached there."""
    stored = calibration_cache.read(points, FIT_REVISION)
    if stored is None:
        cal = _fit(points)
        calibration_cache.write(points, FIT_REVISION, cal.to_json())
        return cal
    return Calibration.from_json(stored.model_dump(), lambda: points)


def _fit(points: Sequence[Point]) -> Calibration:
    from scipy.optimize import least_squares  # a second to import: only when fitting

    if len(points) < 3:
        raise ValueError("at least 3 measurements are needed to fit the calibration")
    design = _Design.of(points)
    n = len(design.stacks)
    k = len(TENSOR_KINDS)
    x0 = np.array([0.6] * k + [0.7, 0.7, 2.0] + [0.0] * n)
    bounds = (_SCALING, _SCALING, _POWER_W)
    lower = [_TENSOR[0]] * k + [b[0] for b in bounds] + [-_LOG_TRAFFIC] * n
    upper = [_TENSOR[1]] * k + [b[1] for b in bounds] + [_LOG_TRAFFIC] * n

    def solve(problem: _Design, start: np.ndarray) -> Any:
        return least_squares(problem.residuals, start, bounds=(lower, upper), x_scale="jac",
                             loss="soft_l1", f_scale=_F_SCALE, max_nfev=_MAX_NFEV, ftol=_TOL,
                             xtol=_TOL, gtol=_TOL)  # fmt: skip

    # Fitted in two steps: first with every GEMM on the units its precision names (smooth in
    # the tensor shares), then, from there, with the autotuner's choice of the faster of a
    # GEMM's tensor-core and CUDA-core algorithms. The choice makes the loss flat wherever a
    # tensor kind runs all on CUDA cores (its share then moves nothing), and a descent from x0
    # stopped on such a plateau: with the A100 left out, conv TF32 at 5.5 % of its peak, every
    # TF32 convolution on CUDA cores, A100 rows 31 % off, at a cost of 0.536 against 0.437
    # this way. Keeping the lower-cost of both starts instead gained < 0.5 % of cost in sample
    # and lost out of sample (fit on Ampere and older: ResNet-50 relative 14.4 % against
    # 11.4 %, development rows); where the choice does not bind at the first step's optimum,
    # the fit is that optimum.
    result = solve(design, solve(design.without_choice(), x0).x)
    eff = _efficiency(result.x)
    return Calibration(
        tensor=eff.tensor,
        stacks={s: math.exp(float(result.x[_FIXED + i])) for i, s in enumerate(design.stacks)},
        scaling=eff.scaling,
        power_w=eff.power_w,
        count=len(points),
        source=lambda: points,
    )


SHIPPED_FIT = Path(str(resources.files("gpuscout.predict") / "data" / "calibration.json"))


def calibration_for(catalog: Catalog) -> Calibration:
    """The calibration predictions use: the shipped fit when no catalog file of yours brings a
    GPU or published row, else a fit with them (seconds, the first time: then read from the
    disk cache, ``calibration_cache.py``). Stored runs never enter it: they anchor.

    The shipped fit is what ``benchmarks/prediction_accuracy.py --write`` fitted to the shipped
    published rows; a test checks it is current."""
    if not catalog.user_gpus() and all(
        catalog.published_origin(i) == "built-in" for i in range(len(catalog.published))
    ):
        try:
            raw = json.loads(SHIPPED_FIT.read_text())
            return Calibration.from_json(raw, lambda: published_points(catalog))
        except (OSError, ValueError, KeyError):
            pass  # not shipped (a source checkout before the first --write): fit it
    return fit_calibration(published_points(catalog), cached=True)


def write_shipped(cal: Calibration) -> Path:
    SHIPPED_FIT.write_text(json.dumps(cal.to_json(), indent=1) + "\n")
    return SHIPPED_FIT


def modelled(cal: Calibration, p: Point) -> float:
    """Samples/s the calibration models for a point, with its own stack's factor."""
    return p.profile.batch / point_terms(p).seconds(cal.for_point(p))
