"""Fitting what kernels cannot know to published end-to-end training rows (scipy).

The kernel model (``kernel_model.py``) is learned from measured FP32 kernels; it cannot know the
share of the tensor-core peak a GEMM reaches, the framework's cost per step, or how much faster
one software stack's kernels are than another's. Those are fitted here, to the catalog's
published single-GPU rows, each modelled at its own batch size:

    step = stack[source's software] x kernels(tensor share) + step cost

by least squares on log(modelled / measured). Every published source is one software stack
(framework + version) and gets its own factor; a prediction uses the factor of your own stored
runs when there are some, else the median of the published stacks.

Ranges come from out-of-sample errors, never the fit's own: each GPU is left out of the fit in
turn and its rows predicted (``Calibration.spread``), and relative speeds are judged leaving one
*source* out (``relative_errors``), since a prediction is only as good as it is on data it has
not seen. The points fitted are built in ``calibration_points.py``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from gpuscout.catalog import Catalog
from gpuscout.predict.calibration_points import STORED, Point, point_terms, published_points
from gpuscout.predict.roofline import (
    POWER_EXPONENT,
    RHO_REF,
    TENSOR_KINDS,
    Efficiency,
    combine,
)

_TENSOR = (0.05, 1.0)
# seconds: a training loop's own cost per step (host work the GPU waits for: the optimizer's
# bookkeeping, the loss fetched, the next batch handed over) is about a millisecond; published
# rows at large batches cannot tell it apart from 0, so it is held at 1 ms or more, or a tiny
# model would be predicted at millions of steps a second
_STEP_S = (0.001, 0.003)
# per kernel: a CUDA launch and the gap to the next kernel is 4 us or more in a framework
_LAUNCH_S = (4e-6, 30e-6)
_CUDA_GEMM = (0.05, 1.0)
_SCALING = (0.0, 1.0)  # 0: a tensor kernel gains nothing from more tensor FLOPs a clock
_POWER_W = (0.0, 10.0)  # watts per SM-GHz for full clocks (H100 SXM runs 261 SM-GHz on 700 W)
_LOG_STACK = 1.5  # a stack is at most e^1.5 = 4.5x faster or slower than the kernels
_RIDGE = 0.05  # pulls unknown stack factors towards 1 where the data cannot tell
_FEED = (2.0, 64.0)  # bytes per clock per SM (today's GPUs need 5 to 14 for full bandwidth)
# fitted parameters before the stack factors: 4 tensor shares, step, launch, feed, CUDA-core GEMM
# share, 2 scaling exponents, power
_FIXED = 11
_MAX_NFEV = 60  # the fit converges in fewer; the bound keeps a pathological user row cheap
_F_SCALE = 0.15  # soft-L1 loss: a row more than ~15 % off (a B200 run at 1.1x an H100) pulls less


@dataclass(frozen=True)
class Calibration:
    tensor: tuple[float, float, float, float]  # per roofline.TENSOR_KINDS
    step_s: float
    launch_s: float
    feed: float  # bytes per clock an SM keeps flowing
    stacks: dict[str, float]
    cuda_gemm: float
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
        return {"tensor": self.tensor, "step_s": self.step_s, "launch_s": self.launch_s,
                "feed": self.feed, "cuda_gemm": self.cuda_gemm, "scaling": self.scaling,
                "power_w": self.power_w, "stacks": self.stacks, "count": self.count}  # fmt: skip

    @property
    def stack(self) -> float:
        """The stack factor a prediction uses: your runs' where you have some, else the median
        of the published stacks."""
        if STORED in self.stacks:
            return self.stacks[STORED]
        published = [v for k, v in self.stacks.items() if k != STORED]
        return statistics.median(published) if published else 1.0

    def _efficiency(self, stack: float) -> Efficiency:
        return Efficiency(self.tensor, self.step_s, self.launch_s, self.feed, stack,
                          self.cuda_gemm, self.scaling, self.power_w)  # fmt: skip

    @property
    def efficiency(self) -> Efficiency:
        return self._efficiency(self.stack)

    def for_point(self, p: Point) -> Efficiency:
        return self._efficiency(self.stacks.get(p.stack, self.stack))

    def spread(self) -> tuple[float, float]:
        """Factors (low, high) covering the middle 80 % of the leave-one-GPU-out errors of the
        shipped data (``out_of_sample.py``): the range of a prediction for a GPU the fit has
        not seen, never the fit's own residuals."""
        from gpuscout.predict.out_of_sample import shipped

        figures = shipped()
        return (figures.low, figures.high)

    def relative_error(self) -> float:
        """How far off a speed relative to another GPU is, out of sample (leave one source
        out, 80th percentile): options closer than this are not ranked."""
        from gpuscout.predict.out_of_sample import shipped

        return shipped().relative_error

    def describe(self) -> str:
        shares = ", ".join(f"{kind} {share:.0%}" for kind, share in
                           zip(TENSOR_KINDS, self.tensor, strict=True))  # fmt: skip
        return (
            f"per-kernel model fitted to {self.count} published measurements: tensor-core "
            f"kernels at these shares of the FP32 GEMM utilisation: {shares} (at "
            f"{RHO_REF:.0f} tensor FLOPs per SM a clock; x(rho/{RHO_REF:.0f})^"
            f"{self.scaling[0]:.2f} for matmuls, ^{self.scaling[1]:.2f} for convolutions, at "
            f"most the peak); CUDA-core GEMMs at {self.cuda_gemm:.0%} of it; full clocks under "
            f"compute load need {self.power_w:.2f} W of board power per SM-GHz (less: clocks "
            f"x(power/need)^{POWER_EXPONENT:g}); {self.launch_s * 1e6:.1f} µs per kernel launch, "
            "memory fed at up to "
            f"{self.feed:.1f} bytes a clock per SM, {self.step_s * 1e3:.2f} ms of "
            f"framework cost per step, software stack factor x{self.stack:.2f}"
        )


_FITS: dict[object, Calibration] = {}


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
    need: np.ndarray  # per kernel: bytes per clock per SM its GPU's bandwidth needs
    sm_ghz_per_w: np.ndarray  # per kernel: its GPU's SM-GHz per watt of board power
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
            need=np.concatenate([np.full(len(t.count), t.need) for t in parts]),
            sm_ghz_per_w=np.concatenate([np.full(len(t.count), t.sm_ghz_per_w) for t in parts]),
            log_measured=np.log([p.measured for p in points]),
            batch=np.array([p.profile.batch for p in points], dtype=float),
            stack_index=np.array([index[p.stack] for p in points]),
            stacks=stacks,
        )

    def log_speed(self, theta: np.ndarray) -> np.ndarray:
        eff = _efficiency(theta)
        step_s, launch_s, feed = eff.step_s, eff.launch_s, eff.feed
        log_stacks = theta[_FIXED:]
        share = eff.share(np.maximum(self.tensor, 0), self.rho)
        compute = np.where(self.tensor >= 0, self.compute / share, self.compute)
        power = np.maximum(1.0, eff.power_w * self.sm_ghz_per_w) ** POWER_EXPONENT
        compute = compute * np.where(self.sm_ghz_per_w > 0, power, 1.0)
        memory = self.memory * np.maximum(1.0, self.need / feed)
        per_kernel = self.count * (launch_s + combine(compute, memory, self.overlap))
        kernels = np.bincount(self.point, weights=per_kernel, minlength=len(self.batch))
        seconds = np.exp(log_stacks[self.stack_index]) * kernels + step_s
        return np.asarray(np.log(self.batch / seconds), dtype=float)

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        errors = self.log_speed(theta) - self.log_measured
        return np.concatenate([errors, _RIDGE * theta[_FIXED:]])


def _efficiency(theta: np.ndarray) -> Efficiency:
    """The kernel-level factors of a parameter vector (stack factors follow them)."""
    return Efficiency(
        tensor=(float(theta[0]), float(theta[1]), float(theta[2]), float(theta[3])),
        step_s=float(theta[4]),
        launch_s=float(theta[5]),
        feed=float(theta[6]),
        cuda_gemm=float(theta[7]),
        scaling=(float(theta[8]), float(theta[9])),
        power_w=float(theta[10]),
    )


def fit_calibration(points: Sequence[Point]) -> Calibration:
    """Least-squares tensor shares, launch and step costs, feed and stack factors for these
    points (the same points give the same fit: kept for the process)."""
    key = tuple((p.label, p.measured, p.profile.key, p.gpu, p.stack, p.tf32) for p in points)
    if key not in _FITS:
        _FITS[key] = _fit(points)
    return _FITS[key]


def _fit(points: Sequence[Point]) -> Calibration:
    from scipy.optimize import least_squares  # a second to import: only when fitting

    if len(points) < 3:
        raise ValueError("at least 3 measurements are needed to fit the calibration")
    design = _Design.of(points)
    n = len(design.stacks)
    k = len(TENSOR_KINDS)
    x0 = np.array([0.6] * k + [0.002, 5e-6, 12.0, 0.8, 0.7, 0.7, 2.0] + [0.0] * n)
    bounds = (_STEP_S, _LAUNCH_S, _FEED, _CUDA_GEMM, _SCALING, _SCALING, _POWER_W)
    lower = [_TENSOR[0]] * k + [b[0] for b in bounds] + [-_LOG_STACK] * n
    upper = [_TENSOR[1]] * k + [b[1] for b in bounds] + [_LOG_STACK] * n
    result = least_squares(design.residuals, x0, bounds=(lower, upper), x_scale="jac",
                           loss="soft_l1", f_scale=_F_SCALE, max_nfev=_MAX_NFEV)  # fmt: skip
    eff = _efficiency(result.x)
    return Calibration(
        tensor=eff.tensor,
        step_s=eff.step_s,
        launch_s=eff.launch_s,
        feed=eff.feed,
        stacks={s: math.exp(float(result.x[_FIXED + i])) for i, s in enumerate(design.stacks)},
        cuda_gemm=eff.cuda_gemm,
        scaling=eff.scaling,
        power_w=eff.power_w,
        count=len(points),
        source=lambda: points,
    )


SHIPPED_FIT = Path(str(resources.files("gpuscout.predict") / "data" / "calibration.json"))


def calibration_for(catalog: Catalog, mine: Sequence[Point] = ()) -> Calibration:
    """The calibration predictions use: the shipped fit when nothing of yours enters it (no
    stored runs, no catalog file of yours), else a fit with them (about a second).

    The shipped fit is what ``benchmarks/prediction_accuracy.py --write`` fitted to the shipped
    published rows; a test checks it is current."""
    if (
        not mine
        and not catalog.user_gpus()
        and all(catalog.published_origin(i) == "built-in" for i in range(len(catalog.published)))
    ):
        try:
            raw = json.loads(SHIPPED_FIT.read_text())
            return Calibration(
                tensor=tuple(raw["tensor"]),
                step_s=raw["step_s"],
                launch_s=raw["launch_s"],
                feed=raw["feed"],
                stacks=raw["stacks"],
                cuda_gemm=raw["cuda_gemm"],
                scaling=tuple(raw["scaling"]),
                power_w=raw["power_w"],
                count=raw["count"],
                source=lambda: published_points(catalog),
            )
        except (OSError, ValueError, KeyError):
            pass  # not shipped (a source checkout before the first --write): fit it
    return fit_calibration(published_points(catalog) + list(mine))


def write_shipped(cal: Calibration) -> Path:
    SHIPPED_FIT.write_text(json.dumps(cal.to_json(), indent=1) + "\n")
    return SHIPPED_FIT


def modelled(cal: Calibration, p: Point) -> float:
    """Samples/s the calibration models for a point, with its own stack's factor."""
    return p.profile.batch / point_terms(p).seconds(cal.for_point(p))
