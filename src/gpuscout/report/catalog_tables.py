"""Terminal tables for the catalog: the filtered list, GPUs side by side, and prices."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table

from gpuscout.catalog import Catalog, Gpu, Price
from gpuscout.catalog.rates import ridge_points
from gpuscout.catalog.views import derived


def _n(value: float | int | None, unit: str = "", absent: str = "—") -> str:
    """A catalog number: '?' when unknown, a dash when the hardware lacks the feature."""
    if value is None:
        return "?"
    if value == 0:
        return absent
    text = f"{value:,.0f}" if value >= 1000 else f"{value:g}"
    return f"{text} {unit}".rstrip()


def _yes(value: bool | None) -> str:
    return "?" if value is None else "yes" if value else "no"


def _nvlink(g: Gpu) -> str:
    if not g.nvlink_gb_per_s_total:
        return _n(g.nvlink_gb_per_s_total, absent="none")
    span = f", up to {g.nvlink_max_gpus} GPUs" if g.nvlink_max_gpus else ""
    return f"{g.nvlink_gb_per_s_per_direction:g}/dir, {g.nvlink_gb_per_s_total:g} total{span}"


def list_table(gpus: list[Gpu]) -> Table:
    table = Table(title="gpuscout specs · dense TFLOPS; FP16/BF16 with FP32 accumulate")
    for name in ("id", "name", "arch", "memory", "GB/s", "FP32", "TF32", "FP16/BF16", "FP8"):
        table.add_column(name, justify="left" if name in ("id", "name", "arch") else "right")
    for name in ("NVLink GB/s", "ECC", "MIG", "TDP W", "launch $"):
        table.add_column(name, justify="right")
    for g in gpus:
        table.add_row(
            g.id,
            g.name,
            g.architecture,
            f"{g.memory_gb:g} GB",
            _n(g.memory_bandwidth_gb_per_s),
            _n(g.fp32_tflops),
            _n(g.tf32_tensor_tflops),
            _n(g.bf16_tensor_tflops or g.fp16_tensor_fp32acc_tflops),
            _n(g.fp8_tensor_tflops),
            _n(g.nvlink_gb_per_s_total, absent="none"),
            _yes(g.ecc),
            _n(g.mig_max_instances, absent="no"),
            _n(g.tdp_w),
            _n(g.launch_price_usd),
        )
    return table


def _price(p: Price | None) -> str:
    if p is None:
        return "?"
    return f"${p.usd_per_gpu_hour:g}/h {p.provider}, {p.observed_text()}"


def _ridge(key: str) -> Callable[[Gpu, Catalog], str]:
    return lambda g, c: _n(ridge_points(g).get(key))


def _derived(key: str, unit: str) -> Callable[[Gpu, Catalog], str]:
    return lambda g, c: _n(derived(g, c).get(key), unit)


ROWS: list[tuple[str, Callable[[Gpu, Catalog], str]]] = [
    ("name", lambda g, c: g.name),
    ("market", lambda g, c: g.market),
    ("architecture (CC)", lambda g, c: f"{g.architecture} ({g.compute_capability})"),
    ("chip · form factor", lambda g, c: f"{g.chip} · {g.form_factor}"),
    ("SMs · boost clock", lambda g, c: f"{_n(g.sm_count)} · {_n(g.boost_clock_mhz, 'MHz')}"),
    ("FP64 TFLOPS", lambda g, c: _n(g.fp64_tflops)),
    ("FP32 TFLOPS", lambda g, c: _n(g.fp32_tflops)),
    ("TF32 tensor", lambda g, c: _n(g.tf32_tensor_tflops)),
    ("FP16 tensor, FP32 acc", lambda g, c: _n(g.fp16_tensor_fp32acc_tflops)),
    ("FP16 tensor, FP16 acc", lambda g, c: _n(g.fp16_tensor_fp16acc_tflops)),
    ("BF16 tensor", lambda g, c: _n(g.bf16_tensor_tflops)),
    ("FP8 tensor", lambda g, c: _n(g.fp8_tensor_tflops)),
    ("FP4 tensor", lambda g, c: _n(g.fp4_tensor_tflops)),
    ("2:4 sparsity (2x)", lambda g, c: _yes(g.sparsity_2to4)),
    ("memory", lambda g, c: f"{g.memory_gb:g} GB {g.memory_type}"),
    ("memory bandwidth", lambda g, c: _n(g.memory_bandwidth_gb_per_s, "GB/s")),
    ("L2 cache", lambda g, c: _n(g.l2_cache_mb, "MB")),
    ("NVLink GB/s", lambda g, c: _nvlink(g)),
    ("PCIe", lambda g, c: f"Gen{_n(g.pcie_gen)} x{_n(g.pcie_lanes)}"),
    ("ECC · MIG", lambda g, c: f"{_yes(g.ecc)} · {_n(g.mig_max_instances, absent='no')}"),
    ("TDP", lambda g, c: _n(g.tdp_w, "W")),
    ("launch", lambda g, c: f"{g.launch_date or '?'} · {_n(g.launch_price_usd, 'USD')}"),
    ("cheapest on-demand", lambda g, c: _price(c.cheapest(g.id, "on_demand"))),
    ("cheapest spot", lambda g, c: _price(c.cheapest(g.id, "spot"))),
    ("ridge FP32 (FLOP/B)", _ridge("fp32")),
    ("ridge TF32 (FLOP/B)", _ridge("tf32")),
    ("ridge FP16/BF16 (FLOP/B)", _ridge("fp16_bf16")),
    ("ridge FP8 (FLOP/B)", _ridge("fp8")),
    ("training TFLOPS / W", _derived("training_tflops_per_watt", "")),
    ("training TFLOPS / $1k launch", _derived("training_tflops_per_1000_usd_launch", "")),
    ("training TFLOPS / ($/h)", _derived("training_tflops_per_usd_hour", "")),
]


def side_by_side(gpus: list[Gpu], catalog: Catalog) -> Table:
    table = Table(title="gpuscout specs · side by side", title_justify="left")
    table.add_column("", style="bold")
    for g in gpus:
        table.add_column(g.id, justify="right")
    for label, cell in ROWS:
        table.add_row(label, *(cell(g, catalog) for g in gpus))
    table.add_row("source", *(f"[{i}]" for i in range(1, len(gpus) + 1)))
    table.add_row("retrieved on", *(str(g.retrieved_on) for g in gpus))
    return table


def prices_table(prices: list[Price], catalog: Catalog) -> Table:
    table = Table(title="gpuscout prices · USD; per GPU (instance prices divided by GPU count)")
    for name in ("gpu", "provider", "kind", "instance", "GPUs", "region", "price", "observed"):
        table.add_column(name, justify="right" if name in ("GPUs", "price") else "left")
    table.add_column("source")
    for p in prices:
        price = f"{p.usd_per_gpu_hour:g}/h" if p.usd_per_gpu_hour else f"{p.usd_per_gpu:,.0f}"
        table.add_row(
            p.gpu_id,
            p.provider,
            p.kind,
            p.instance_type or "",
            str(p.gpus_per_instance),
            p.region or "",
            price,
            p.observed_text(),
            p.source,
        )
    return table
