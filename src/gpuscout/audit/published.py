"""What published measurements say: the best MFU ever reached, and the best speed per GPU.

The bound for "implausible" is the highest MFU among the catalog's published training
results for the same kind of workload and precision class. Each ResNet-50 result is credited
with the FLOPs of the network its source trains (``predict/data/resnet50_variants.csv``: v1.5
for NVIDIA's and Lambda's PyTorch results, v1 for tf_cnn_benchmarks), not one count for all.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.audit.flops import family, workload_flops
from gpuscout.catalog import Catalog, Published, peak_tflops


@dataclass(frozen=True)
class Bound:
    mfu: float
    row: Published
    tflops: float
    peak_tflops: float

    def describe(self) -> str:
        r = self.row
        per_gpu = r.throughput / r.gpu_count
        return (
            f"{self.mfu:.0%}: {r.gpu} {r.precision} {per_gpu:,.0f} {r.unit} per GPU "
            f"({r.framework} {r.software or ''}, {r.source})"
        )


def _mixed(precision: str | None) -> bool | None:
    return None if precision is None else precision.startswith("mixed")


def _flops(row: Published) -> float:
    name = row.workload
    if family(name) == "resnet50":
        from gpuscout.predict.calibration_points import modelled_workload

        name = modelled_workload(row.source_id, row.workload)
    return workload_flops(name, row.seq_len).flops_per_sample


def _rows(catalog: Catalog, workload: str, precision: str | None) -> list[Published]:
    same = [r for r in catalog.published if family(r.workload) == family(workload)]
    mixed = _mixed(precision)
    in_class = [r for r in same if mixed is None or _mixed(r.precision) == mixed]
    return in_class or same


def best_mfu(catalog: Catalog, workload: str, precision: str | None) -> Bound | None:
    """The highest MFU among published results for this workload family and precision class."""
    best: Bound | None = None
    for row in _rows(catalog, workload, precision):
        gpu = catalog.gpus[row.gpu_id]
        peak, _ = peak_tflops(gpu, row.precision)
        tflops = row.throughput / row.gpu_count * _flops(row) / 1e12
        if best is None or tflops / peak > best.mfu:
            best = Bound(tflops / peak, row, tflops, peak)
    return best


def best_on_gpu(
    catalog: Catalog, gpu_id: str, workload: str, precision: str | None
) -> Published | None:
    """The fastest published per-GPU result for this GPU, workload family and precision class."""
    rows = [
        r
        for r in catalog.published
        if r.gpu_id == gpu_id
        and family(r.workload) == family(workload)
        and (r.workload == workload or family(workload) == "resnet50")
        and (precision is None or _mixed(r.precision) == _mixed(precision))
    ]
    return max(rows, key=lambda r: r.throughput / r.gpu_count, default=None)
