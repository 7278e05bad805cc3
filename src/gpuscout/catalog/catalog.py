"""The catalog: the shipped data files plus the user's own, merged and indexed.

Loaded lazily (nothing is read at import) and once per set of files. A user's GPU row with a
shipped id replaces the shipped row whole, so a row never mixes facts from two sources.

Every GPU and price row is checked for physical plausibility as it loads (see
:mod:`gpuscout.catalog.plausible`): an impossible row is refused in one line; a user's row more
than 2x from the shipped row of the same GPU is kept with a warning, printed on stderr once per
process, since it replaces the shipped row in every prediction, cost and calibration.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpuscout.catalog.files import Table, check_dates, check_duplicate, read_table, validated
from gpuscout.catalog.models import Busbw, Gpu, Price, Published
from gpuscout.catalog.names import Resolved, Resolver
from gpuscout.catalog.plausible import check_gpu, check_price, differences
from gpuscout.catalog.skypilot import read_skypilot
from gpuscout.core.errors import UserError, did_you_mean

DATA_VERSION = "v1"
ENV_VAR = "GPUSCOUT_CATALOG"
BUILTIN = "built-in"


@dataclass
class Catalog:
    gpus: dict[str, Gpu]
    prices: list[Price]
    published: list[Published]
    origin: dict[str, str]  # gpu id -> "built-in" or the user file that supplied the row
    files: list[str]  # the user's files applied, in order
    skipped: dict[str, int] = field(default_factory=dict)  # SkyPilot accelerators not known
    busbw: list[Busbw] = field(default_factory=list)  # measured NCCL bus bandwidths
    published_from: list[str] = field(default_factory=list)  # origin of each published row
    warnings: list[str] = field(default_factory=list)  # user rows far from the shipped ones
    overrides: dict[str, str] = field(default_factory=dict)  # gpu id -> file replacing its row
    _resolver: Resolver | None = None

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = Resolver(self.gpus.values())
        return self._resolver

    def resolve(self, name: str) -> Resolved:
        """The GPU a user means; unknown or ambiguous names are one-line user errors."""
        return self.resolver.resolve(name)

    def find_device(self, device_name: str) -> Gpu | None:
        """The GPU for a name a driver reports ("NVIDIA A100-SXM4-40GB"), or None."""
        found = self.resolver.find(device_name)
        return found.gpu if found else None

    def measured_busbw(self, gpu_id: str, link: str) -> Busbw | None:
        """The measured NCCL bus bandwidth of this GPU over this link ("nvlink", "pcie"), or
        None; where several rows match, the last loaded (a user's file over the shipped row)."""
        rows = [b for b in self.busbw if b.gpu_id == gpu_id and b.link == link]
        return rows[-1] if rows else None

    def published_origin(self, index: int) -> str:
        """Where ``published[index]`` came from: "built-in" or the user's file."""
        return self.published_from[index] if index < len(self.published_from) else BUILTIN

    def user_gpus(self) -> dict[str, list[str]]:
        """The user's files that supply GPU rows -> the ids of those rows."""
        out: dict[str, list[str]] = {}
        for gpu_id, origin in self.origin.items():
            if origin != BUILTIN:
                out.setdefault(origin, []).append(gpu_id)
        return out

    def prices_for(self, gpu_id: str) -> list[Price]:
        return [p for p in self.prices if p.gpu_id == gpu_id]

    def cheapest(self, gpu_id: str, kind: str) -> Price | None:
        rows = [p for p in self.prices_for(gpu_id) if p.kind == kind]
        return min(rows, key=lambda p: p.usd_per_gpu_hour or p.usd_per_gpu or 0.0, default=None)


def data_dir() -> Path:
    """The shipped data files (a real folder: the package is installed unzipped)."""
    return Path(str(resources.files("gpuscout.catalog") / "data" / DATA_VERSION))


def user_paths(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Files from --catalog, then from GPUSCOUT_CATALOG (os.pathsep-separated), each with '~'
    expanded as a shell would (an environment value often reaches here unexpanded)."""
    env = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p.strip()]
    return tuple(os.path.expanduser(p) for p in (*env, *extra))


def load_catalog(extra: Sequence[str] = ()) -> Catalog:
    """The catalog with the user's files (``extra`` and GPUSCOUT_CATALOG) applied."""
    return _load(user_paths(extra))


@functools.lru_cache(maxsize=8)
def _load(paths: tuple[str, ...]) -> Catalog:
    base = data_dir()
    builtin = [
        base / "gpus.csv",
        base / "prices.csv",
        base / "published_training.csv",
        base / "nccl_busbw.csv",
    ]
    mine = _expand(paths)
    tables = [(read_table(p), BUILTIN) for p in builtin]
    tables += [(read_table(p), str(p)) for p in mine]
    cat = Catalog({}, [], [], {}, [str(p) for p in mine])
    # GPU files first, so a user's price file may name a GPU their own GPU file adds.
    for table, origin in sorted(tables, key=lambda t: t[0].kind != "gpus"):
        _add(cat, table, origin)
    for warning in cat.warnings:  # once per process: this function is cached
        print(f"gpuscout: warning: {warning}", file=sys.stderr)
    return cat


def _expand(paths: Iterable[str]) -> list[Path]:
    out: list[Path] = []
    for text in paths:
        path = Path(text).expanduser()
        if path.is_dir():
            found = sorted(path.glob("*.csv"))
            if not found:
                raise UserError(f"catalog folder '{path}' has no .csv files.", "check the path.")
            out.extend(found)
        else:
            out.append(path)
    return out


def _add(cat: Catalog, table: Table, origin: str) -> None:
    if table.kind == "skypilot":
        got = read_skypilot(table, cat.resolver)
        cat.prices.extend(got.prices)
        for name, n in got.skipped.items():
            cat.skipped[name] = cat.skipped.get(name, 0) + n
        return
    seen: dict[str, int] = {}  # a user file's row keys -> line: a duplicate names both
    for line, row in validated(table):
        if origin != BUILTIN:  # the shipped files are checked by their own test
            check_dates(row, table.path, line)
            check_duplicate(row, table.path, line, seen)
        if isinstance(row, Gpu):
            check_gpu(row, table.path, line)
            shipped = cat.gpus.get(row.id) if cat.origin.get(row.id) == BUILTIN else None
            if origin != BUILTIN and shipped is not None:
                cat.overrides[row.id] = origin
                warning = differences(row, shipped, table.path, line)
                if warning:
                    cat.warnings.append(warning)
            cat.gpus[row.id] = row
            cat.origin[row.id] = origin
            cat._resolver = None
            continue
        assert isinstance(row, Price | Published | Busbw)
        if row.gpu_id not in cat.gpus:
            raise UserError(
                f"{table.path}: line {line}, column 'gpu_id': '{row.gpu_id}' is not in the "
                f"catalog.{did_you_mean(row.gpu_id, cat.gpus)}",
                "use an id from 'gpuscout specs', or add the GPU in a GPU file.",
            )
        if isinstance(row, Price):
            check_price(row, table.path, line)
            cat.prices.append(row)
        elif isinstance(row, Busbw):
            cat.busbw.append(row)
        else:
            cat.published.append(row)
            cat.published_from.append(origin)
