"""Data-parallel training on n GPUs: the part of the gradient all-reduce the backward pass
cannot hide, and the wait for the slowest GPU.

    step(n) = step(1) x (1 + straggler x z(n)) + sync x log2(n) + exposed communication
    all-reduce = 2 (n-1)/n x gradient bytes / bus bandwidth + 2 (n-1) x latency   (ring)
    exposed = max(all-reduce - overlap x step(1), last bucket)

Sharded weights (PyTorch FSDP FULL_SHARD, DeepSpeed ZeRO-3) replace the all-reduce by a
reduce-scatter of the gradients, half its bytes, and all-gather every weight twice a step, for
the forward pass and again for the backward pass (which also serves a checkpointed block's
recomputation), each (n-1)/n x the 16-bit weights' bytes over the same bus: the same ring
traffic that NCCL's busbw measures. They hide behind the step as the all-reduce does
(``overlap``): no constant of their own.

``z(n)`` is the expected largest of n standard normal draws (Blom's approximation): every step
waits for the slowest of n GPUs, whose step times spread by ``straggler`` (a share of the
step). ``sync`` is a fixed per-step cost of agreeing across GPUs (a barrier, log2(n) rounds).
Gradients leave in 25 MB buckets, so at least the last bucket's reduction is never hidden.
Bus bandwidths are NCCL ``busbw`` figures: measured ones from the catalog's data
(``nccl_busbw.csv``, each row with its source; a user's catalog file can add or replace them),
otherwise a share of the link's line rate.

The constants are not set by hand: ``scripts/fit_scaling.py`` fits them to the published
multi-GPU rows (``gpuscout.predict.scaling_fit``) and writes ``data/scaling_fit.json``, which
this module reads; the constants the published rows cannot pin down (they are not
bandwidth-bound) are stated there as such. Every figure used is printed.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, replace
from importlib import resources
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

from gpuscout.catalog import Catalog, Gpu
from gpuscout.core.errors import UserError

BUCKET_BYTES = 25e6
PCIE_GB_PER_S_PER_DIRECTION = {3: 16.0, 4: 32.0, 5: 64.0}  # x16 line rate
# PCIe cards in one server: the common 4U chassis holds 8 double-width cards (10-card ones
# exist, rarely). An assumption, printed where it applies.
PCIE_MAX_PER_MACHINE = 8
SXM_MAX_PER_MACHINE = 8  # an HGX/DGX board, where the catalog does not say

LinkKind = Literal["nvlink", "pcie_p2p", "pcie_no_p2p", "network"]
FIT_PATH = Path(str(resources.files("gpuscout.predict") / "data" / "scaling_fit.json"))


@dataclass(frozen=True)
class Constants:
    """The scaling model's constants; ``fitted`` names the ones fitted to published rows."""

    straggler: float = 0.0  # spread of one step's time across GPUs, a share of the step
    sync_s: float = 0.0  # seconds per step per log2(n) round of agreeing
    overlap: float = 2 / 3  # share of the 1-GPU step the all-reduce hides behind (backward)
    achieved: float = 1.0  # share of NCCL's benchmark busbw a framework's all-reduce reaches
    latency_s: float = 10e-6  # per ring hop
    nvlink_share: float = 0.8  # of NVLink's per-direction line rate, where nothing was measured
    pcie_p2p_share: float = 0.7  # of PCIe x16's per-direction line rate, with peer-to-peer
    pcie_no_p2p_share: float = 0.45  # GeForce: no peer-to-peer, through host memory
    network_share: float = 0.9  # of the network's line rate per node
    fitted: tuple[str, ...] = ()
    rows: int = 0  # published multi-GPU rows fitted to
    loo_mae_points: float | None = None  # leave-one-row-out mean absolute error, points
    left_out: tuple[str, ...] = ()  # rows left out of the fit, each with why

    def share(self, kind: LinkKind) -> float:
        return {
            "nvlink": self.nvlink_share,
            "pcie_p2p": self.pcie_p2p_share,
            "pcie_no_p2p": self.pcie_no_p2p_share,
            "network": self.network_share,
        }[kind]

    def left_out_summary(self) -> str | None:
        return _left_out_summary(self.left_out)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One assumption line: what was fitted, to how many rows, how well."""
        if not self.fitted:
            return "scaling constants: stated, not fitted (no published multi-GPU rows)"
        values = {
            "straggler": f"step-time spread {self.straggler:.1%}",
            "sync_s": f"sync {self.sync_s * 1e3:.2g} ms per log2(n)",
            "overlap": f"overlap {self.overlap:.0%} of the step",
            "achieved": f"all-reduce at {self.achieved:.0%} of NCCL busbw",
            "nvlink_share": f"NVLink {self.nvlink_share:.0%} of line rate",
            "pcie_p2p_share": f"PCIe P2P {self.pcie_p2p_share:.0%}",
            "pcie_no_p2p_share": f"PCIe without P2P {self.pcie_no_p2p_share:.0%}",
            "latency_s": f"latency {self.latency_s * 1e6:.3g} us per hop",
        }
        fitted = ", ".join(values[k] for k in self.fitted)
        err = (
            f"; leave-one-row-out error {self.loo_mae_points:.1f} points of efficiency"
            if self.loo_mae_points is not None
            else ""
        )
        stated = ", ".join(v for k, v in values.items() if k not in self.fitted)
        return (
            f"scaling: {fitted} fitted to {self.rows} published multi-GPU rows{err}; "
            f"stated, not fitted: {stated}"
        )


def _left_out_summary(left_out: tuple[str, ...]) -> str | None:
    """One line for the rows the fit left out: super-linear ones by name, the rest counted
    by reason (``scripts/fit_scaling.py`` prints each)."""
    if not left_out:
        return None
    superlinear = [line.split(": ")[0] for line in left_out if ": super-linear" in line]
    reasons: dict[str, int] = {}
    for line in left_out:
        if ": super-linear" not in line:
            why = line.split(": ", 1)[-1]
            reasons[why] = reasons.get(why, 0) + 1
    parts = []
    if superlinear:
        parts.append(
            f"{len(superlinear)} super-linear row(s) (above 100 % of n x the 1-GPU row): "
            + "; ".join(superlinear)
        )
    parts += [f"{k} row(s): {why}" for why, k in reasons.items()]
    return "scaling fit left out " + ", and ".join(parts)


def parse_constants(data: dict[str, Any]) -> Constants:
    known = set(Constants.__dataclass_fields__)
    kw = {k: v for k, v in data.items() if k in known}
    for name in ("fitted", "left_out"):
        kw[name] = tuple(kw.get(name, ()))
    return Constants(**kw)


@functools.cache
def constants() -> Constants:
    """The shipped fit; without it, the stated defaults (the fit script regenerates it)."""
    try:
        data = json.loads(FIT_PATH.read_text())
    except (OSError, ValueError):
        return Constants()
    return parse_constants(data.get("constants", {}))


@dataclass(frozen=True)
class Link:
    busbw_gb_per_s: float
    name: str
    assumption: str
    kind: LinkKind = "nvlink"


DEFAULT_NETWORK_GBIT = 100.0  # between machines, when --network does not say


def max_per_machine(gpu: Gpu) -> tuple[int, str]:
    """How many of this GPU one machine holds, and why: SXM boards as many as NVLink joins
    (8 on HGX/DGX), PCIe cards an assumed server maximum."""
    if "sxm" in gpu.form_factor.lower():
        most = gpu.nvlink_max_gpus or SXM_MAX_PER_MACHINE
        return most, f"an {gpu.form_factor} board holds {most}"
    return PCIE_MAX_PER_MACHINE, f"assumed at most {PCIE_MAX_PER_MACHINE} PCIe cards per server"


def machines_for(gpu: Gpu, count: int) -> tuple[int, int]:
    """(machines, GPUs per machine) for ``count`` GPUs: one machine while its form factor holds
    them, else the fewest machines with the same number in each (16 SXM GPUs: 2 x 8)."""
    most = max_per_machine(gpu)[0]
    machines = max(1, math.ceil(count / most))
    while count % machines:
        machines += 1
    return machines, count // machines


def check_machine(gpu: Gpu, nodes: int, per_node: int) -> None:
    """Refuse more GPUs in one machine than its form factor holds."""
    most, why = max_per_machine(gpu)
    if per_node <= most:
        return
    machines = math.ceil(per_node / most)
    each = math.ceil(per_node / machines)
    raise UserError(
        f"{per_node} x {gpu.id} do not fit in one machine ({why}).",
        f"use several machines, MACHINESxGPUS, e.g. --count {machines * nodes}x{each}.",
    )


def link_kind(gpu: Gpu, per_node: int) -> LinkKind:
    """The link a ring of ``per_node`` of these GPUs in one machine runs over."""
    if (gpu.nvlink_gb_per_s_per_direction or 0.0) and per_node <= (gpu.nvlink_max_gpus or 0):
        return "nvlink"
    return "pcie_no_p2p" if gpu.market == "consumer" else "pcie_p2p"


def link(
    gpu: Gpu,
    n: int,
    nodes: int = 1,
    network_gbit: float = DEFAULT_NETWORK_GBIT,
    *,
    catalog: Catalog,
    kind: LinkKind | None = None,
    consts: Constants | None = None,
) -> Link:
    """The interconnect a ring over ``nodes`` machines of ``n`` GPUs runs at: the slowest of
    the links inside a machine and, across machines, the network. ``catalog`` holds the
    measured bus bandwidths; ``kind`` forces the link inside a machine (a published row that
    says it ran over PCIe although the GPU takes an NVLink bridge)."""
    c = consts or constants()
    inside = _in_node(gpu, kind or link_kind(gpu, n), catalog, c)
    if nodes <= 1:
        return inside
    net = network_gbit / 8 * c.network_share
    if net >= inside.busbw_gb_per_s:
        return inside
    return Link(
        net,
        f"{network_gbit:g} Gb/s network",
        f"{nodes} nodes: the ring crosses the network, assumed {c.network_share:.0%} of "
        f"{network_gbit:g} Gb/s per node (one NIC per node)",
        "network",
    )


def _measured(catalog: Catalog, gpu: Gpu, link: str, name: str, kind: LinkKind) -> Link | None:
    row = catalog.measured_busbw(gpu.id, link)
    if row is None:
        return None
    return Link(
        row.busbw_gb_per_s,
        name,
        f"{name}: NCCL {row.collective} busbw {row.busbw_gb_per_s:g} GB/s, measured on "
        f"{row.gpu_count} x {gpu.id} ({row.source})",
        kind,
    )


def _in_node(gpu: Gpu, kind: LinkKind, catalog: Catalog, c: Constants) -> Link:
    if kind == "nvlink":
        nvlink = gpu.nvlink_gb_per_s_per_direction or 0.0
        measured = _measured(catalog, gpu, "nvlink", "NVLink", kind)
        if measured is not None:
            return measured
        return Link(
            nvlink * c.nvlink_share,
            "NVLink",
            f"{_origin(c, 'nvlink_share')} {c.nvlink_share:.0%} of NVLink's {nvlink:g} GB/s "
            "per direction",
            kind,
        )
    gen = gpu.pcie_gen or 4
    measured = _measured(catalog, gpu, "pcie", f"PCIe Gen{gen}", kind)
    if measured is not None:
        return measured
    line = PCIE_GB_PER_S_PER_DIRECTION.get(gen, 32.0)
    share = c.share(kind)
    why = "no P2P on GeForce: through host memory" if kind == "pcie_no_p2p" else "with P2P"
    return Link(
        line * share,
        f"PCIe Gen{gen}",
        f"{_origin(c, kind + '_share')} {share:.0%} of PCIe Gen{gen} x16's {line:g} GB/s per "
        f"direction ({why})",
        kind,
    )


def _origin(c: Constants, name: str) -> str:
    return f"fitted to {c.rows} published multi-GPU rows:" if name in c.fitted else "assumed"


def slowest_of(n: int) -> float:
    """Expected largest of n standard normal draws (Blom's approximation); 0 for one GPU."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def allreduce_seconds(
    gradient_bytes: float, n: int, busbw_gb_per_s: float, consts: Constants | None = None
) -> float:
    if n <= 1:
        return 0.0
    c = consts or constants()
    bus = busbw_gb_per_s * 1e9 * c.achieved
    return 2 * (n - 1) / n * gradient_bytes / bus + 2 * (n - 1) * c.latency_s


def allgather_seconds(
    weight_bytes: float, n: int, busbw_gb_per_s: float, consts: Constants | None = None
) -> float:
    """One ring all-gather (or reduce-scatter) of ``weight_bytes`` over n GPUs: each GPU
    receives (n-1)/n of them, half an all-reduce's traffic."""
    if n <= 1:
        return 0.0
    c = consts or constants()
    bus = busbw_gb_per_s * 1e9 * c.achieved
    return (n - 1) / n * weight_bytes / bus + (n - 1) * c.latency_s


def step_seconds(
    step1: float,
    gradient_bytes: float,
    n: int,
    busbw_gb_per_s: float,
    consts: Constants | None = None,
    sharded_bytes: float = 0.0,
) -> float:
    """Seconds per step on n GPUs, each with the single-GPU batch (weak scaling). Every term
    is >= 0 and non-decreasing in n, so efficiency is <= 1 and never rises with n on one
    link. ``sharded_bytes``: the 16-bit weights sharded over the GPUs (FSDP, ZeRO-3), each
    all-gathered twice a step while the gradients are reduce-scattered; 0: data parallel."""
    if n <= 1:
        return step1
    c = consts or constants()
    if sharded_bytes:
        reduce = allgather_seconds(gradient_bytes, n, busbw_gb_per_s, c)
        comm = reduce + 2 * allgather_seconds(sharded_bytes, n, busbw_gb_per_s, c)
    else:
        reduce = comm = allreduce_seconds(gradient_bytes, n, busbw_gb_per_s, c)
    tail = reduce * min(1.0, BUCKET_BYTES / max(gradient_bytes, 1.0))
    exposed = max(comm - c.overlap * step1, tail)
    wait = step1 * c.straggler * slowest_of(n) + c.sync_s * math.log2(n)
    return step1 + wait + exposed


def efficiency(step1: float, stepn: float) -> float:
    """Throughput of n GPUs over n x the throughput of one (1.0 = linear)."""
    return step1 / stepn


def with_values(c: Constants, **values: float) -> Constants:
    return replace(c, **values)  # type: ignore[arg-type]


def describe_layouts(layouts: list[tuple[int, int]], reference: str) -> list[str]:
    """Assumption lines for several GPUs: what the relative speed and the scaling efficiency
    are relative to (a 2x8 row is 16 GPUs against one reference GPU, and against 16 x one of
    its own kind), and the fit behind the scaling constants."""
    c = constants()
    lines = [
        f"vs {reference}: all n GPUs of a row together (for MACHINESxGPUS, machines x GPUs) "
        f"against one {reference}; scaling: the row's throughput against n x one GPU of its "
        "own kind (linear = 100 %)",
        c.describe(),
    ]
    if any(nodes > 1 for nodes, _ in layouts):
        lines.append(
            "several machines: the same GPUs per machine, one NIC each; the ring's slowest "
            "link sets the all-reduce"
        )
    summary = c.left_out_summary()
    return [*lines, summary] if summary else lines


def layout_assumptions(gpu: Gpu, n: int, per_node: int, link: Link) -> list[str]:
    """The per-row assumptions of ``n`` GPUs in all, ``per_node`` in each machine."""
    if n <= 1:
        return []
    lines = [link.assumption]
    if per_node > 1 and "sxm" not in gpu.form_factor.lower():
        lines.append(f"{gpu.id}: {max_per_machine(gpu)[1]}")
    return lines
