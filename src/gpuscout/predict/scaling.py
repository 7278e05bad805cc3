"""Data-parallel training on n GPUs: the part of the gradient all-reduce the backward pass
cannot hide.

    step(n) = step(1) + exposed all-reduce
    all-reduce = 2 (n-1)/n x gradient bytes / bus bandwidth + 2 (n-1) x latency   (ring)
    exposed = max(all-reduce - backward time, last bucket)

The backward pass is taken as 2/3 of the step (it does twice the forward's FLOPs), and
gradients leave in 25 MB buckets, so at least the last bucket's reduction is never hidden.
Bus bandwidths are NCCL ``busbw`` figures: measured ones from the catalog's data
(``nccl_busbw.csv``, each row with its source; a user's catalog file can add or replace them),
otherwise a stated fraction of the link's line rate. Every figure used is printed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.catalog import Catalog, Gpu

BUCKET_BYTES = 25e6
LATENCY_S = 10e-6  # per ring hop
BACKWARD_SHARE = 2 / 3
NVLINK_LINE_SHARE = 0.8  # of the per-direction line rate, where nothing was measured
PCIE_GB_PER_S_PER_DIRECTION = {3: 16.0, 4: 32.0, 5: 64.0}  # x16 line rate
PCIE_SHARE_P2P = 0.7
NETWORK_SHARE = 0.9
PCIE_SHARE_NO_P2P = 0.45  # GeForce: no peer-to-peer, traffic bounces through host memory


@dataclass(frozen=True)
class Link:
    busbw_gb_per_s: float
    name: str
    assumption: str


def link(
    gpu: Gpu, n: int, nodes: int = 1, network_gbit: float = 100.0, *, catalog: Catalog
) -> Link:
    """The interconnect a ring over ``nodes`` machines of ``n`` GPUs runs at: the slowest of
    the links inside a machine and, across machines, the network. ``catalog`` holds the
    measured bus bandwidths."""
    inside = _in_node(gpu, n, catalog)
    if nodes <= 1:
        return inside
    net = network_gbit / 8 * NETWORK_SHARE
    if net >= inside.busbw_gb_per_s:
        return inside
    return Link(
        net,
        f"{network_gbit:g} Gb/s network",
        f"{nodes} nodes: the ring crosses the network, assumed {NETWORK_SHARE:.0%} of "
        f"{network_gbit:g} Gb/s per node (one NIC per node)",
    )


def _measured(catalog: Catalog, gpu: Gpu, link: str, name: str) -> Link | None:
    row = catalog.measured_busbw(gpu.id, link)
    if row is None:
        return None
    return Link(
        row.busbw_gb_per_s,
        name,
        f"{name}: NCCL {row.collective} busbw {row.busbw_gb_per_s:g} GB/s, measured on "
        f"{row.gpu_count} x {gpu.id} ({row.source})",
    )


def _in_node(gpu: Gpu, n: int, catalog: Catalog) -> Link:
    nvlink = gpu.nvlink_gb_per_s_per_direction or 0.0
    if nvlink and n <= (gpu.nvlink_max_gpus or 0):
        measured = _measured(catalog, gpu, "nvlink", "NVLink")
        if measured is not None:
            return measured
        bw = nvlink * NVLINK_LINE_SHARE
        return Link(
            bw,
            "NVLink",
            f"assumed {NVLINK_LINE_SHARE:.0%} of NVLink's {nvlink:g} GB/s per direction",
        )
    gen = gpu.pcie_gen or 4
    measured = _measured(catalog, gpu, "pcie", f"PCIe Gen{gen}")
    if measured is not None:
        return measured
    line = PCIE_GB_PER_S_PER_DIRECTION.get(gen, 32.0)
    share = PCIE_SHARE_NO_P2P if gpu.market == "consumer" else PCIE_SHARE_P2P
    why = "no P2P on GeForce: through host memory" if gpu.market == "consumer" else "with P2P"
    return Link(
        line * share,
        f"PCIe Gen{gen}",
        f"assumed {share:.0%} of PCIe Gen{gen} x16's {line:g} GB/s per direction ({why})",
    )


def allreduce_seconds(gradient_bytes: float, n: int, busbw_gb_per_s: float) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) / n * gradient_bytes / (busbw_gb_per_s * 1e9) + 2 * (n - 1) * LATENCY_S


def step_seconds(step1: float, gradient_bytes: float, n: int, busbw_gb_per_s: float) -> float:
    """Seconds per step on n GPUs, each with the single-GPU batch (weak scaling)."""
    reduce = allreduce_seconds(gradient_bytes, n, busbw_gb_per_s)
    if reduce == 0.0:
        return step1
    tail = reduce * min(1.0, BUCKET_BYTES / max(gradient_bytes, 1.0))
    exposed = max(reduce - BACKWARD_SHARE * step1, tail)
    return step1 + exposed


def efficiency(step1: float, stepn: float) -> float:
    """Throughput of n GPUs over n x the throughput of one (1.0 = linear)."""
    return step1 / stepn
