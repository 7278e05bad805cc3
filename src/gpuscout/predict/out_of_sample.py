"""How wrong the end-to-end model is on data it was not fitted to.

Ways of holding data out, each a question a user asks:

- leave one source out: "how fast, on my software, which no published row used?" (absolute
  speed with the median stack's traffic: the range of a prediction without stored runs), and
  "how do these GPUs rank?" (speed relative to the other GPUs of the held-out source: which
  options are distinguishable);
- leave one chip out (the ``chip`` column: V100 16 and 32 GB, or four A100 ids, are one
  chip, left out together): "how fast is a GPU whose silicon the fit never saw?" (relative to
  the source's other GPUs: the range when your stored runs fix the stack);
- leave one GPU id out and leave the newest architectures out: reported, never a range (a
  GPU id's same-chip twin stays in the fit, which flatters it).

A **frozen test split** (``FROZEN_CHIPS``, ``FROZEN_SOURCES``) is held out of every design
choice and of the rows the ranges come from: its figures are reported apart (fit on the other
rows, predict it). The shipped calibration is then fitted on every row.

``benchmarks/prediction_accuracy.py`` prints all of them; ``--write`` stores the figures
predictions use in ``predict/data/out_of_sample.json``; a test recomputes them.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from gpuscout.predict.bands import Calibrated, band, calibrated, envelope
from gpuscout.predict.calibrate import fit_calibration, modelled
from gpuscout.predict.calibration_points import Point

NEWEST = ("Ada Lovelace", "Hopper", "Blackwell")
# The frozen test split, chosen once (issue 29, 2026-12-06) before any design choice of predict
# v3: the newest data-centre silicon (B200's GB100, GH200's superchip) and one whole source.
FROZEN_CHIPS = ("GB100 (two dies)", "GH100 (Grace Hopper superchip)")
FROZEN_SOURCES = ("nvidia-dle-pt-bert",)


def frozen(p: Point) -> bool:
    """In the frozen test split: never used to design, tune or make ranges."""
    return p.gpu.chip in FROZEN_CHIPS or p.source_id in FROZEN_SOURCES


def development(points: Sequence[Point]) -> list[Point]:
    return [p for p in points if not frozen(p)]


FAMILIES = {"resnet50": "resnet50", "resnet50-v1.5": "resnet50", "bert-base": "bert",
            "bert-large": "bert"}  # fmt: skip


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


def _held_out(
    points: Sequence[Point], held: Callable[[Point], bool], peers: str = "all"
) -> list[Held]:
    """Fit without the points ``held`` picks, predict them. Relative errors against the other
    GPUs of their group: in-sample predictions of every point (``all``), of the held-out ones
    only (``held``: a source left out has no in-sample rows of its own), or of the fitted ones
    (``train``)."""
    test = [i for i, p in enumerate(points) if held(p)]
    train = [i for i, p in enumerate(points) if not held(p)]
    if not test or len(train) < 3:
        return []
    every = range(len(points))
    logs = _logs(points, train, test if peers == "held" else every)
    mates = {"all": every, "held": test, "train": train}[peers]
    rel = _relative(points, logs, test, mates)
    return [Held(points[i], logs[i], rel.get(i)) for i in test]


def _each(points: Sequence[Point], key: Callable[[Point], str], peers: str) -> list[Held]:
    """Each value of ``key`` held out in turn."""
    out: list[Held] = []
    for value in sorted({key(p) for p in points}):
        out += _held_out(points, lambda p, v=value: key(p) == v, peers)  # type: ignore[misc]
    return out


def leave_one_gpu_out(points: Sequence[Point]) -> list[Held]:
    return _each(points, lambda p: p.gpu.id, "all")


def leave_one_chip_out(points: Sequence[Point]) -> list[Held]:
    """Every row of a chip held out together (its same-silicon twins too)."""
    return _each(points, lambda p: str(p.gpu.chip), "all")


def leave_one_source_out(points: Sequence[Point]) -> list[Held]:
    return _each(points, lambda p: p.source_id, "held")


def frozen_test(points: Sequence[Point]) -> list[Held]:
    """Fit on the development rows, predict the frozen split (relative to the other GPUs of
    the same source, development rows included, predicted in sample)."""
    return _held_out(points, frozen)


def leave_newest_out(points: Sequence[Point], newest: Sequence[str] = NEWEST) -> list[Held]:
    return _held_out(points, lambda p: p.gpu.architecture in newest, "train")


def measured_on(held: Sequence[Held], framework: str) -> list[Held]:
    """The held-out predictions of rows a ``framework`` measured ("pytorch": Lambda's and
    NVIDIA's PyTorch rows), each still fitted and held out among all the rows."""
    return [h for h in held if h.point.stack.split(" ")[0] == framework]


def mape(logs: Sequence[float]) -> float:
    """Mean absolute percentage error of predictions whose log errors these are."""
    return statistics.fmean(abs(math.exp(e) - 1) for e in logs) if logs else float("nan")


Bands = dict[str, tuple[float, float]]  # per workload family (resnet50, bert)


@dataclass(frozen=True)
class Figures:
    """What predictions use, all from the development rows (the frozen split left out), per
    workload family, as errors differ by family: the range without stored runs (whole sources
    left out, absolute), with them (chips left out, relative), each as wide as covers 80 % of
    a group left out of the band as well as the fit (``bands.py``; ``levels`` and ``nested``
    say how wide and how much, keyed ``split:family``); for what no published row validates,
    the widest of those and of the families' middle 90 %; and the relative error that
    separates options (80th percentile, sources left out)."""

    source_absolute: Bands
    chip_relative: Bands
    unvalidated: tuple[float, float]
    relative_error: float
    made_from: str
    levels: dict[str, float] = field(default_factory=dict)
    nested: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, points: Sequence[Point], levels: Mapping[str, float] | None = None) -> Figures:
        """The figures of these points; with ``levels`` (``split:family`` to a middle-%
        level), the bands at those levels instead of the narrowest that covers the target."""
        at = dict(levels or {})
        dev = development(points)
        by_source = leave_one_source_out(dev)
        by_chip = leave_one_chip_out(dev)
        families = sorted({family(p) for p in dev})
        rel = [abs(math.exp(h.relative) - 1) for h in by_source if h.relative is not None]
        made: dict[str, Calibrated] = {}
        for f in families:
            src = [h for h in by_source if family(h.point) == f]
            made[f"source:{f}"] = calibrated([h.absolute for h in src],
                                             [h.point.source_id for h in src],
                                             at.get(f"source:{f}"))  # fmt: skip
            chip = [h for h in by_chip if family(h.point) == f and h.relative is not None]
            made[f"chip:{f}"] = calibrated([h.relative or 0.0 for h in chip],
                                           [str(h.point.gpu.chip) for h in chip],
                                           at.get(f"chip:{f}"))  # fmt: skip
        wide = [band([h.absolute for h in by_source if family(h.point) == f], 90.0)
                for f in families]  # fmt: skip
        return cls(
            source_absolute={f: made[f"source:{f}"].factors for f in families},
            chip_relative={f: made[f"chip:{f}"].factors for f in families},
            unvalidated=envelope(wide + [c.factors for c in made.values()]),
            relative_error=round(float(np.percentile(rel, 80)), 6) if rel else 0.15,
            made_from=f"{len(dev)} published single-GPU measurements (the frozen test split's "
            f"{len(points) - len(dev)} left out)",
            levels={k: c.level for k, c in made.items()},
            nested={k: c.nested for k, c in made.items()},
        )


def _path() -> Path:
    return Path(str(resources.files("gpuscout.predict") / "data" / "out_of_sample.json"))


def shipped() -> Figures:
    """The figures computed from the shipped published data (a fallback if missing: +-30 %,
    15 % relative, said so by ``made_from``)."""
    try:
        raw = json.loads(_path().read_text())
        return Figures(
            source_absolute={k: (v[0], v[1]) for k, v in raw["source_absolute"].items()},
            chip_relative={k: (v[0], v[1]) for k, v in raw["chip_relative"].items()},
            unvalidated=(raw["unvalidated"][0], raw["unvalidated"][1]),
            relative_error=raw["relative_error"],
            made_from=raw["made_from"],
            levels=raw.get("levels", {}),
            nested=raw.get("nested", {}),
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError):
        guess = (0.7, 1.3)
        return Figures({}, {}, guess, 0.15, "no out-of-sample figures shipped: assumed +-30 %")


def write(figures: Figures) -> Path:
    path = _path()
    path.write_text(json.dumps(figures.__dict__, indent=1) + "\n")
    return path
