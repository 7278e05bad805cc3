"""``gpuscout specs`` and ``gpuscout prices``: the catalog, filtered or side by side."""

from __future__ import annotations

import argparse
from typing import Any

from gpuscout.cli.output import print_json, write_text
from gpuscout.cli.parser import MIN_MEMORY_GB, comma_items
from gpuscout.core.text import csv_text

CATALOG_HELP = "your own catalog CSV or folder (GPUs, prices, or a SkyPilot catalog); repeatable"


def add_catalog_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", action="append", default=[], metavar="PATH", help=CATALOG_HELP)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "specs",
        help="the GPU catalog, filtered or side by side",
        description="The built-in catalog of NVIDIA GPUs (and your own rows, --catalog): "
        "memory, bandwidth, dense TFLOPS per precision, interconnect, TDP and price, every "
        "figure with its source. With GPU names: those side by side; without: the list, "
        "filtered and sorted.",
        epilog="e.g. gpuscout specs 3090 4090 h100-sxm; gpuscout specs --feature fp8,nvlink "
        "--sort bandwidth",
    )
    p.add_argument(
        "names", nargs="*", metavar="GPU",
        help="GPUs to compare, by catalog id or a short name, spaced or a comma list, e.g. "
        "4090 h100 or 4090,h100 (default: the whole catalog, as a list)",
    )  # fmt: skip
    p.add_argument(
        "--min-memory", type=MIN_MEMORY_GB, metavar="GB",
        help="only GPUs with at least this much memory, in GB, e.g. 48",
    )  # fmt: skip
    p.add_argument(
        "--arch", help="only this architecture (or part of its name), e.g. ampere, hopper, ada"
    )
    p.add_argument(
        "--feature",
        action="append",
        default=[],
        help="only GPUs with every feature named, a comma list and/or repeated: bf16, ecc, "
        "fp4, fp8, mig, nvlink, sparsity, tf32; e.g. --feature fp8,nvlink",
    )
    p.add_argument(
        "--market",
        choices=("consumer", "datacenter", "workstation"),
        help="only one market: consumer (GeForce RTX), datacenter (T4, A100, H100, B200 ...) "
        "or workstation (RTX A6000, RTX 6000 Ada ...) (default: all three)",
    )
    p.add_argument(
        "--sort",
        choices=("memory", "bandwidth", "fp32", "training", "tdp", "price"),
        help="order the list: memory, bandwidth, fp32 (FP32 TFLOPS) or training (dense "
        "BF16/FP16 tensor TFLOPS, what mixed-precision training can reach) highest first; tdp "
        "(power) or price (launch price) lowest first (default: catalog order)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--csv", action="store_true", help="print the rows as catalog CSV, to edit and pass back"
    )
    add_catalog_arg(p)
    p.set_defaults(handler=run_specs)

    q = sub.add_parser(
        "prices",
        help="cloud and purchase prices in the catalog",
        description="Every price in the catalog (and your own, --catalog): cloud rentals in "
        "US dollars per GPU-hour, purchases in US dollars per GPU, each with its provider, "
        "instance, region, the date it was seen and its source.",
        epilog="e.g. gpuscout prices h100-sxm --kind on_demand; gpuscout prices --provider aws",
    )
    q.add_argument(
        "names", nargs="*", metavar="GPU",
        help="only these GPUs, spaced or a comma list (default: every GPU)",
    )  # fmt: skip
    q.add_argument("--provider", help="only this provider, e.g. aws, lambda, runpod")
    q.add_argument(
        "--kind",
        choices=("on_demand", "spot", "purchase_new", "purchase_used"),
        help="only one kind: on_demand (cloud, per GPU-hour), spot (cloud, interruptible, "
        "per GPU-hour), purchase_new or purchase_used (buying the card, per GPU) (default: all)",
    )
    q.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(q)
    q.set_defaults(handler=run_prices)


def run_specs(args: argparse.Namespace) -> int:
    from gpuscout.catalog import Gpu, load_catalog
    from gpuscout.catalog.views import DENSE_NOTE, select, sort_gpus, specs_json

    catalog = load_catalog(args.catalog)
    assumptions: list[str] = []
    names = comma_items(args.names, "specs", "4090,h100")
    features = comma_items(args.feature, "--feature", "fp8,nvlink")
    if names:
        resolved = [catalog.resolve(n) for n in names]
        assumptions = [r.assumption for r in resolved if r.assumption]
        picked = {r.gpu.id for r in resolved}
        allowed = {g.id for g in select(catalog, args.min_memory, args.arch, features, args.market)}
        gpus = [r.gpu for r in resolved if r.gpu.id in allowed]
        gpus = list({g.id: g for g in gpus}.values())
        dropped = sorted(picked - allowed)
        if dropped:
            assumptions.append(f"left out by the filters: {', '.join(dropped)}")
    else:
        gpus = select(catalog, args.min_memory, args.arch, features, args.market)
    if args.sort:
        gpus = sort_gpus(gpus, args.sort)
    if args.json:
        print_json(specs_json(gpus, catalog, assumptions))
        return 0
    if args.csv:
        rows = [g.to_csv_row() for g in gpus]
        write_text(
            csv_text(list(Gpu.model_fields), rows)
        )  # a user catalog's ESC shown, not obeyed, on a terminal
        return 0
    from gpuscout.report.catalog_tables import list_table, side_by_side
    from gpuscout.report.console import stdout_console

    console = stdout_console()
    if not gpus:
        console.print("no GPU in the catalog passes these filters")
        return 0
    console.print(side_by_side(gpus, catalog) if names else list_table(gpus))
    if names:
        for i, g in enumerate(gpus, 1):
            origin = catalog.origin.get(g.id, "")
            mine = f" (from your catalog {origin})" if origin != "built-in" else ""
            console.print(f"[{i}] {g.id}{mine}: {g.source}", highlight=False)
            if g.notes:
                console.print(f"    note: {g.notes}", highlight=False)
    if catalog.files:
        console.print(f"catalog: built-in + your files {', '.join(catalog.files)}", highlight=False)
    for line in [DENSE_NOTE, *assumptions]:
        console.print(f"assumption: {line}", highlight=False)
    return 0


def run_prices(args: argparse.Namespace) -> int:
    from gpuscout.catalog import load_catalog

    catalog = load_catalog(args.catalog)
    ids = {catalog.resolve(n).gpu.id for n in comma_items(args.names, "prices", "h100-sxm,4090")}
    rows = [
        p
        for p in catalog.prices
        if (not ids or p.gpu_id in ids)
        and (not args.provider or p.provider.lower() == args.provider.lower())
        and (not args.kind or p.kind == args.kind)
    ]
    if args.json:
        print_json([p.model_dump(mode="json") for p in rows])
        return 0
    from gpuscout.report.catalog_tables import prices_table
    from gpuscout.report.console import stdout_console

    console = stdout_console()
    console.print(prices_table(rows, catalog) if rows else "no prices match")
    if catalog.skipped:
        skipped = ", ".join(f"{k} ({v} rows)" for k, v in sorted(catalog.skipped.items()))
        console.print(f"skipped SkyPilot rows for GPUs not in the catalog: {skipped}")
    return 0
