"""How wrong the end-to-end model is on data it was not fitted to.

Three ways of holding data out, each a question a user asks:

- leave one GPU out: "how fast is a GPU nobody in the data measured?" (absolute speed; its
  spread sets every prediction's range);
- leave one source out: "how do these GPUs rank for my software?" (speed relative to the other
  GPUs of the held-out source, in which a stack factor cancels; it decides which options are
  distinguishable);
- leave the newest architectures out: fit on Ampere and older, predict Ada, Hopper and
  Blackwell ("will it hold for the next GPU?").

``benchmarks/prediction_accuracy.py`` prints all of them; ``--write`` stores the figures
predictions use in ``predict/data/out_of_sample.json``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from gpuscout.predict.calibrate import fit_calibration, modelled
from gpuscout.predict.calibration_points import Point

NEWEST = ("Ada Lovelace", "Hopper", "Blackwell")
FAMILIES = {"resnet50": "resnet50", "bert-base": "bert", "bert-large": "bert"}


def family(p: Point) -> str:
    return FAMILIES.get(p.workload, p.workload)


@dataclass(frozen=True)
class Held:
    """One held-out prediction: the point, and its log errors (absolute; relative to its
    group's other GPUs, where its group has some)."""

    point: Point
    absolute: float
    relative: float | None


def _relative(points: Sequence[Point], logs: dict[int, float], targets: Sequence[int],
              peers: Sequence[int]) -> dict[int, float]:  # fmt: skip
    """Relative log error of each target against the mean log error of the peers of its group
    (other GPUs of the same source, workload and precision)."""
    out = {}
    for i in targets:
        mates = [j for j in peers if j != i and points[j].group == points[i].group
                 and points[j].gpu.id != points[i].gpu.id]  # fmt: skip
        if mates:
            out[i] = logs[i] - statistics.fmean(logs[j] for j in mates)
    return out


def _logs(
    points: Sequence[Point], train: Sequence[int], predict: Sequence[int]
) -> dict[int, float]:
    cal = fit_calibration([points[i] for i in train])
    return {i: math.log(modelled(cal, points[i]) / points[i].measured) for i in predict}


def leave_one_gpu_out(points: Sequence[Point]) -> list[Held]:
    out = []
    for gpu in sorted({p.gpu.id for p in points}):
        test = [i for i, p in enumerate(points) if p.gpu.id == gpu]
        train = [i for i, p in enumerate(points) if p.gpu.id != gpu]
        logs = _logs(points, train, range(len(points)))
        rel = _relative(points, logs, test, range(len(points)))
        out += [Held(points[i], logs[i], rel.get(i)) for i in test]
    return out


def leave_one_source_out(points: Sequence[Point]) -> list[Held]:
    out = []
    for source in sorted({p.source_id for p in points}):
        test = [i for i, p in enumerate(points) if p.source_id == source]
        train = [i for i, p in enumerate(points) if p.source_id != source]
        if len(train) < 3:
            continue
        logs = _logs(points, train, test)
        rel = _relative(points, logs, test, test)
        out += [Held(points[i], logs[i], rel.get(i)) for i in test]
    return out


def leave_newest_out(points: Sequence[Point], newest: Sequence[str] = NEWEST) -> list[Held]:
    test = [i for i, p in enumerate(points) if p.gpu.architecture in newest]
    train = [i for i, p in enumerate(points) if p.gpu.architecture not in newest]
    if not test or len(train) < 3:
        return []
    logs = _logs(points, train, range(len(points)))
    rel = _relative(points, logs, test, train)
    return [Held(points[i], logs[i], rel.get(i)) for i in test]


def mape(logs: Sequence[float]) -> float:
    """Mean absolute percentage error of predictions whose log errors these are."""
    return statistics.fmean(abs(math.exp(e) - 1) for e in logs) if logs else float("nan")


@dataclass(frozen=True)
class Figures:
    """What predictions use: the range of an absolute prediction (factors covering the middle
    80 % of the leave-one-GPU-out errors) and the relative error that separates options (the
    80th percentile of the leave-one-source-out relative errors)."""

    low: float
    high: float
    relative_error: float
    made_from: str

    @classmethod
    def of(cls, points: Sequence[Point]) -> Figures:
        by_gpu = [h.absolute for h in leave_one_gpu_out(points)]
        lo, hi = np.percentile(by_gpu, [10, 90])
        rel = [abs(math.exp(h.relative) - 1) for h in leave_one_source_out(points)
               if h.relative is not None]  # fmt: skip
        return cls(
            low=math.exp(-float(hi)),
            high=math.exp(-float(lo)),
            relative_error=float(np.percentile(rel, 80)) if rel else 0.15,
            made_from=f"{len(points)} published single-GPU measurements",
        )


def _path() -> Path:
    return Path(str(resources.files("gpuscout.predict") / "data" / "out_of_sample.json"))


def shipped() -> Figures:
    """The figures computed from the shipped published data (a fallback if missing: +-30 %,
    15 % relative, said so by ``made_from``)."""
    try:
        return Figures(**json.loads(_path().read_text()))
    except (OSError, ValueError, TypeError):
        return Figures(0.7, 1.3, 0.15, "no out-of-sample figures shipped: assumed +-30 %")


def write(figures: Figures) -> Path:
    path = _path()
    path.write_text(json.dumps(figures.__dict__, indent=1) + "\n")
    return path
