"""A refitted calibration kept on disk, so a catalog file of yours costs one fit, not one a command.

The shipped fit is precomputed (``data/calibration.json``), but any catalog file of yours with a
GPU or published row makes ``calibration_for`` refit it (stored runs never do: they anchor): a
least-squares fit of seconds (plus a second to import SciPy) that every ``predict``, ``cost``,
``advise`` and ``report`` would pay again. The result depends only on the points fitted and the
code that fits them, so it is cached under a key made of both:

- every field of every point, in full (the GPU's row, the step profile with its kernels, the
  measured speed, the stack, ...), not only ids: an edited row is a new key;
- the fitting code's identity: ``calibrate.FIT_REVISION`` (bumped when the fit changes), the
  gpuscout, NumPy and SciPy versions, and a digest of the source and data the fit reads
  (``predict/*.py``, ``catalog/*.py``, the kernel model and the assumed overheads), so an edit
  in a source checkout, where the version does not move, is never served a stale fit.

The file's name is the key's SHA-256 and the file repeats the key: a damaged, foreign or
mismatched file is ignored and the fit recomputed, never trusted and never a traceback. Writing
is atomic (a temporary file renamed) and may fail (a read-only cache) without failing the
command: it only costs the fit again. At most ``MAX_FILES`` are kept, the least recently used
removed first. Nothing is printed: a cache hit gives the same calibration, field for field.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

if TYPE_CHECKING:
    from gpuscout.predict.calibration_points import Point

# One file per distinct set of points: each combination of catalog files a user moves between.
# 32 files of under 1 KB keep a working week's alternatives for 32 KB; an evicted one costs a
# single refit.
MAX_FILES = 32
_FORMAT = "gpuscout calibration cache 1"
_PACKAGE = Path(__file__).resolve().parents[1]  # src/gpuscout
# What the fit reads besides its points: its code, the catalog's peak arithmetic, the kernel
# model, the assumed overheads, the stacks' convolution layouts, the HLO-op issue rate and which
# ResNet-50 each source trains (the shipped profiles enter through the points themselves).
_CODE = ("predict/*.py", "catalog/*.py", "predict/data/kernel_model.json",
         "predict/data/overheads.csv", "predict/data/conv_layouts.csv",
         "predict/data/instruction_rates.csv",
         "predict/data/resnet50_variants.csv")  # fmt: skip


class Stored(BaseModel):
    """A cache file as read: every field checked, so a damaged or foreign file is refused."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

    format: Literal["gpuscout calibration cache 1"]
    key: str
    tensor: tuple[float, float, float, float]
    stacks: dict[str, float]
    scaling: tuple[float, float]
    power_w: float
    count: int

    @model_validator(mode="after")
    def _physical(self) -> Stored:
        if min(self.tensor) <= 0 or min(self.stacks.values(), default=1.0) <= 0:
            raise ValueError("a tensor share or traffic factor is not positive")
        if min(*self.scaling, self.power_w) < 0:
            raise ValueError("a scaling exponent or the board power is negative")
        return self


def cache_dir() -> Path:
    """Beside the traced profiles (``profile.cache_dir``), in the user's cache directory."""
    return Path(platformdirs.user_cache_dir("gpuscout")) / "calibrations"


def key(points: Sequence[Point], revision: int) -> str:
    """SHA-256 of everything the fit of ``points`` depends on (module docstring)."""
    digest = hashlib.sha256()
    for part in (_FORMAT, str(revision), _version("gpuscout"), _version("numpy"),
                 _version("scipy"), _code_digest()):  # fmt: skip
        digest.update(part.encode() + b"\0")
    dumped: dict[int, str] = {}  # points share GPU rows and profiles: each dumped once
    for p in points:
        for f in dataclasses.fields(p):
            value = getattr(p, f.name)
            if isinstance(value, BaseModel):
                if id(value) not in dumped:
                    dumped[id(value)] = value.model_dump_json()
                text = dumped[id(value)]
            else:
                text = repr(value)  # floats' repr round-trips exactly
            digest.update(f"{f.name}={text}".encode() + b"\0")
        digest.update(b"\1")
    return digest.hexdigest()


def read(points: Sequence[Point], revision: int) -> Stored | None:
    """The cached fit of ``points``, or None when there is none usable (missing, damaged,
    another key, or a count or stacks that do not belong to these points)."""
    wanted = key(points, revision)
    path = cache_dir() / f"{wanted}.json"
    try:
        found = Stored.model_validate_json(path.read_bytes())
    except (OSError, ValueError, ValidationError):
        return None
    stacks = sorted({p.stack for p in points})
    if found.key != wanted or found.count != len(points) or list(found.stacks) != stacks:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    return found


def write(points: Sequence[Point], revision: int, fit: dict[str, object]) -> None:
    """Cache ``fit`` (``Calibration.to_json``) for ``points``; an unwritable cache only costs
    the fit again next time, so every OSError is swallowed."""
    wanted = key(points, revision)
    folder = cache_dir()
    path = folder / f"{wanted}.json"
    tmp = folder / f".{wanted}.{os.getpid()}.tmp"
    text = json.dumps({"format": _FORMAT, "key": wanted, **fit}, indent=1)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text + "\n")
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return
    prune(folder)


def prune(folder: Path, keep: int = MAX_FILES) -> None:
    """Remove all but the ``keep`` most recently used cache files, and temporary files a
    killed process left over an hour ago (another process may be pruning too, or writing: a
    file already gone is fine)."""
    dated, now = [], time.time()
    for path in [*folder.glob("*.json"), *folder.glob(".*.tmp")]:
        try:
            dated.append((path.stat().st_mtime, path.name, path))
        except OSError:
            continue
    dated.sort()
    files = [d for d in dated if d[2].suffix == ".json"]
    stale = [d for d in dated if d[2].suffix == ".tmp" and d[0] < now - 3600]
    for _, _, path in [*files[: max(0, len(files) - keep)], *stale]:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def _code_digest() -> str:
    """The bytes of the code and data the fit reads (empty where the package is not plain
    files, e.g. zipped: the versions and ``FIT_REVISION`` then identify the code)."""
    digest = hashlib.sha256()
    for pattern in _CODE:
        for path in sorted(_PACKAGE.glob(pattern)):
            try:
                digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
            except OSError:
                continue
    return digest.hexdigest()
