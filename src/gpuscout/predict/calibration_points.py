"""The measurements a calibration is fitted to: the published rows (the catalog's, and your
catalog files').

Each becomes a :class:`Point`, a step profile on a catalog GPU at a measured speed, modelled at
its own batch; a user's row in the fit is always said (:func:`user_rows_used`). Your stored GPU
runs are not fitted to: they anchor (``anchoring.py``). The fit itself is ``calibrate.py``;
this module imports nothing above it.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from gpuscout.catalog import Catalog, Gpu, Published
from gpuscout.predict.profile import Profile, cached
from gpuscout.predict.roofline import Terms, terms

# Published workload -> the profile that models it: workload, dims, and the batch per GPU a row
# is modelled at when the source does not state its batch. A source whose model is another
# variant of the same network names its own profile in ``data/resnet50_variants.csv``.
_SHAPES: dict[str, tuple[str, dict[str, int], int]] = {
    "resnet50": ("resnet50", {}, 256),
    "bert-base": ("bert-base", {}, 32),
    "bert-large": ("bert-large", {}, 32),
}


@functools.cache
def source_variants() -> dict[tuple[str, str], str]:
    """``data/resnet50_variants.csv``: (source_id, published workload) -> the built-in workload
    whose profile models that source's rows, where the source's script says which network it
    trains (each row quotes it). "ResNet-50" is two networks: v1 (Keras', tf_cnn_benchmarks'
    ``resnet50``) and v1.5 (NVIDIA's DeepLearningExamples, and Lambda's PyTorch benchmark,
    which runs them), whose downsampling 1x1 convolutions do 4x the work (+6 % FLOPs). A
    source not listed is modelled with ``_SHAPES``' profile."""
    path = resources.files("gpuscout.predict") / "data" / "resnet50_variants.csv"
    with path.open(encoding="utf-8") as f:
        return {(r["source_id"], r["workload"]): r["profile"] for r in csv.DictReader(f)}


def modelled_workload(source_id: str, workload: str) -> str:
    """The built-in workload that models ``source_id``'s ``workload`` rows (its own variant
    where ``source_variants`` says, else the default profile of that workload)."""
    return source_variants().get((source_id, workload), _SHAPES[workload][0])


@dataclass(frozen=True)
class Point:
    """One measurement to fit: a profile on a GPU at a measured speed (samples/s per GPU)."""

    gpu: Gpu
    profile: Profile
    measured: float
    source_id: str
    label: str
    workload: str = ""  # as the source names it (resnet50, bert-base, bert-large)
    measured_batch: int | None = None  # per GPU, as measured (None: the source does not say)
    origin: str = "built-in"  # the catalog file of the published row ("built-in": shipped)
    stack: str = ""  # the software stack: framework and version
    tf32: bool = True  # float32 matmuls on TF32 tensor cores

    @property
    def modelled_batch(self) -> int:
        """Per GPU, as modelled: the profile's batch (the measured one where the source says)."""
        return self.profile.batch

    @property
    def group(self) -> tuple[str, str, str]:
        """Rows whose ratios mean something: one source, workload and precision."""
        return (self.source_id, self.profile.key.split("@")[0], self.profile.precision)


_TERMS: dict[tuple[str, str, str, str, bool], Terms] = {}


def point_terms(p: Point) -> Terms:
    # the method too: the same step's op-by-op kernels (``as_op_by_op``) share its key
    key = (p.profile.key, p.profile.method, p.gpu.model_dump_json(), p.stack, p.tf32)
    if key not in _TERMS:
        _TERMS[key] = terms(p.profile, p.gpu, p.tf32)
    return _TERMS[key]


def _stack(row: Published) -> str:
    return f"{row.framework} {row.software or '?'}".strip()


def published_points(catalog: Catalog, pytorch_traced: str = "tensorflow") -> list[Point]:
    """The catalog's single-GPU published measurements that have a shipped profile (the same
    rows give the same points: kept for the process, as each takes a profile rescaled).

    ``pytorch_traced``: whose trace models the rows measured on PyTorch. "tensorflow" (what
    the shipped calibration is fitted with): the Keras model's step, as every row; "torch":
    the same network written in plain PyTorch and captured from torch (``examples/models/
    torch_resnet50.py``, ``torch_bert.py``; shipped under their own ``/torch`` keys), its
    kernels fused as the Keras-traced ones are; "torch-eager": that step's op-by-op kernels,
    as ``predict`` runs a user's PyTorch model (``profile_trace.eager``). A row without a
    torch-traced profile is left out (:func:`torch_traced_missing` names them)."""
    key = (tuple(catalog.published), tuple(catalog.published_from),
           tuple(sorted(catalog.gpus.items())), pytorch_traced)  # fmt: skip
    if key not in _POINTS:
        _POINTS[key] = _published_points(catalog, pytorch_traced)
    return list(_POINTS[key])


_POINTS: dict[object, list[Point]] = {}


def _published_points(catalog: Catalog, pytorch_traced: str = "tensorflow") -> list[Point]:
    points = []
    for index, row in enumerate(catalog.published):
        point = _point(catalog, row, catalog.published_origin(index), _backend(row, pytorch_traced))
        if point is not None:
            points.append(point)
    return points


def _backend(row: Published, pytorch_traced: str) -> str:
    return pytorch_traced if row.framework == "pytorch" else "tensorflow"


def torch_traced_missing(catalog: Catalog) -> list[str]:
    """The published single-GPU PyTorch rows modelled with a TensorFlow-traced profile that
    have no torch-traced one (``published_points(pytorch_traced="torch")`` leaves them out)."""
    return [
        f"{row.gpu} {row.workload} {row.precision} ({row.source_id})"
        for row in catalog.published
        if row.framework == "pytorch"
        and _point(catalog, row) is not None
        and _point(catalog, row, backend="torch") is None
    ]


def profile_for(
    workload: str, dims: dict[str, int], batch: int, precision: str, backend: str = "tensorflow"
) -> Profile | None:
    """A profile at this batch: shipped or cached; a shipped one at another batch is rescaled
    (``Profile.at_batch``), so each published row is modelled at its own batch."""
    if backend == "torch-eager":
        found = cached(workload, dims, batch, precision, backend="torch")
        return found.as_op_by_op() if found is not None and found.op_by_op else None
    return cached(workload, dims, batch, precision, backend=backend)


def _point(
    catalog: Catalog, row: Published, origin: str = "built-in", backend: str = "tensorflow"
) -> Point | None:
    if row.gpu_count != 1 or row.workload not in _SHAPES:
        return None
    _, dims, default_batch = _SHAPES[row.workload]
    workload = modelled_workload(row.source_id, row.workload)
    if row.seq_len:
        dims = {**dims, "seq_len": row.seq_len}
    batch = row.batch_size_per_gpu or default_batch
    profile = profile_for(workload, dims, batch, row.precision, backend)
    if profile is None:
        return None
    label = f"{row.gpu} {row.workload} {row.precision} ({row.source_id})"
    gpu = catalog.gpus[row.gpu_id]
    return Point(gpu, profile, row.throughput, row.source_id, label, row.workload,
                 row.batch_size_per_gpu, origin, _stack(row))  # fmt: skip


def user_rows_used(catalog: Catalog, points: Sequence[Point]) -> list[str]:
    """One line per user catalog file whose rows this fit or its predictions use: the GPUs
    whose shipped rows it replaces or that it adds, and the published measurements it brings.

    A user's row moves every fitted factor (a TB/s-for-GB/s typo in one GPU row once moved the
    old model's efficiencies from 95/80/49 % to 35/67/100 %), so it never enters a calibration
    silently.
    """
    on_gpu: dict[str, int] = {}
    brought: dict[str, list[str]] = {}
    for p in points:
        on_gpu[p.gpu.id] = on_gpu.get(p.gpu.id, 0) + 1
        if p.origin != "built-in":
            brought.setdefault(p.origin, []).append(p.gpu.id)
    lines = []
    for path, ids in catalog.user_gpus().items():
        parts = []
        for gpu_id in sorted(ids):
            verb = "replaces the shipped row of" if gpu_id in catalog.overrides else "adds"
            used = on_gpu.get(gpu_id, 0)
            fit = f", under {used} measurement{'s' * (used != 1)} in the fit" if used else ""
            parts.append(f"{verb} {gpu_id}{fit}")
        lines.append(f"your catalog {path} {'; '.join(parts)}")
    for path, ids in brought.items():
        lines.append(
            f"your catalog {path} brings {len(ids)} published measurement"
            f"{'s' * (len(ids) != 1)} into the fit ({', '.join(sorted(set(ids)))})"
        )
    return lines
