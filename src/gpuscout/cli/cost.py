"""``gpuscout cost``: time and money of a training job across options, every assumption shown."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from gpuscout.cli.job_args import (
    JOB_OPTIONS,
    add_global_batch,
    add_job_size,
    add_job_source,
    add_stack_option,
    fixed_batch,
    given,
    refuse_with,
)
from gpuscout.cli.output import print_json
from gpuscout.cli.parser import (
    CHECKPOINT_HOURS,
    DATA_GB,
    FAILURES_PER_1000_GPU_H,
    FRACTION,
    GPU_HOURS,
    PURCHASE_USD,
    RESTART_MINUTES,
    SCALING_EFFICIENCY,
    SPEEDUP,
    USD_PER_DAY,
    USD_PER_KWH,
    YEARS,
    cost_option,
)
from gpuscout.cli.specs import add_catalog_arg
from gpuscout.core.articles import COST_EXAMPLE_GPU_HOURS, REFERENCE_GPU
from gpuscout.core.errors import UserError
from gpuscout.workloads import WORKLOADS

DEFAULT_OPTIONS = "rtx-3090,rtx-4090,a100-40gb-sxm,a100-80gb-sxm,h100-sxm"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "cost",
        help="time and money of a training job across GPUs and providers",
        description="Time and money of one training job on each option (GPU x count x "
        "provider, or owned GPUs): rental or energy and amortised purchase, the rework "
        "failures cost, and what waiting costs you. Speeds are predicted (the same as "
        "predict, advise and report) unless --speedup gives them; every assumption is "
        "printed and can be set.",
        epilog="e.g. gpuscout cost --model my_model.py:build --samples 1200000 --epochs 50",
    )
    p.add_argument(
        "--example", choices=("articles",),
        help="the cost table of article 001 (see gpuscout.core.articles), with its own speed and "
        "scaling figures",
    )  # fmt: skip
    job = p.add_argument_group(
        "the job: --gpu-hours, or one of --workload, --model, --from-run with its size"
    )
    job.add_argument(
        "--gpu-hours", type=GPU_HOURS,
        help="the job as GPU-hours on the reference GPU (--reference), e.g. 1000",
    )  # fmt: skip
    add_job_source(job, "a built-in workload: " + ", ".join(WORKLOADS))
    add_stack_option(job)
    add_job_size(job)
    add_global_batch(job)
    p.add_argument(
        "--reference", default=REFERENCE_GPU,
        help=f"the GPU the job is measured on (default {REFERENCE_GPU}, the articles')",
    )  # fmt: skip
    p.add_argument(
        "--option",
        type=cost_option,
        action="append",
        default=[],
        metavar="SPEC",
        help="an option to price: GPU[xCOUNT][@PROVIDER|@owned|@used][=USD_PER_HOUR], "
        "repeatable; @owned: bought new, @used: bought used, each set against the cheapest "
        f"rental of as many (default: {DEFAULT_OPTIONS}, x1 and x8)",
    )
    p.add_argument(
        "--speedup", type=SPEEDUP, action="append", default=[], metavar="GPU=X",
        help="a GPU's speed against the reference GPU, in place of the prediction, e.g. "
        "a100-40gb=1.78 (comma list or repeated)",
    )  # fmt: skip
    p.add_argument(
        "--scaling", type=SCALING_EFFICIENCY, action="append", default=[],
        metavar="N=EFF|GPUxN=EFF",
        help="scaling efficiency of N GPUs against linear, in place of the fitted scaling "
        "model, e.g. 4=0.68 or rtx-3090x4=0.68 (comma list or repeated)",
    )  # fmt: skip
    p.add_argument(
        "--purchase", type=PURCHASE_USD, action="append", default=[], metavar="GPU=USD",
        help="what one GPU costs you to buy new, in US dollars, for @owned options, e.g. "
        "rtx-4090=1599 (default: the catalog's new price, else launch MSRP; comma list or "
        "repeated)",
    )  # fmt: skip
    p.add_argument(
        "--used-price", type=PURCHASE_USD, action="append", default=[], metavar="GPU=USD",
        help="what one GPU costs you to buy used, in US dollars, for @used options, e.g. "
        "rtx-3090=700 (default: the catalog's newest dated used price; comma list or repeated)",
    )  # fmt: skip
    a = p.add_argument_group("assumptions (defaults are printed with the result)")
    a.add_argument(
        "--power-utilization", type=FRACTION,
        help="the share of its TDP a GPU draws while training, e.g. 0.8",
    )  # fmt: skip
    a.add_argument(
        "--usd-per-kwh", type=USD_PER_KWH,
        help="your electricity price, US dollars per kWh (owned GPUs; 0: free to you)",
    )  # fmt: skip
    a.add_argument(
        "--amortize-years", type=YEARS,
        help="years an owned GPU is paid off over, e.g. 3",
    )  # fmt: skip
    a.add_argument(
        "--owned-utilization", type=FRACTION,
        help="the share of those years an owned GPU trains (its idle time is paid too), e.g. 0.5",
    )  # fmt: skip
    a.add_argument(
        "--checkpoint-hours", type=CHECKPOINT_HOURS,
        help="hours between checkpoints: a failure loses half of one on average (0: none lost)",
    )  # fmt: skip
    a.add_argument(
        "--restart-minutes", type=RESTART_MINUTES,
        help="minutes to restart after a failure",
    )  # fmt: skip
    a.add_argument(
        "--failures-consumer", type=FAILURES_PER_1000_GPU_H, metavar="PER_1000_GPU_H",
        help="failures per 1,000 GPU-hours on consumer cards (no ECC)",
    )  # fmt: skip
    a.add_argument(
        "--failures-datacenter", type=FAILURES_PER_1000_GPU_H, metavar="PER_1000_GPU_H",
        help="failures per 1,000 GPU-hours on data-centre cards",
    )  # fmt: skip
    a.add_argument("--no-failures", action="store_true", help="leave failures out")
    a.add_argument("--delay-usd-per-day", type=USD_PER_DAY, help="what a day of waiting costs you")
    a.add_argument("--data-gb", type=DATA_GB, metavar="GB",
                   help="your training data, copied into each rented machine before its first "
                   "step at the sourced data_copy_gbit (default: not counted)")  # fmt: skip
    p.add_argument(
        "--db", help="results database, whose GPU runs calibrate the predictions (default: "
        "GPUSCOUT_DB or the user data dir)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arg(p)
    p.set_defaults(handler=run_cost)


FAILURE_OPTIONS = {
    "failures_consumer": "--failures-consumer", "failures_datacenter": "--failures-datacenter",
    "checkpoint_hours": "--checkpoint-hours", "restart_minutes": "--restart-minutes",
}  # fmt: skip
SOURCE_OPTIONS = ("--workload", "--model", "--from-run")
OWNED_OPTIONS = {
    "purchase": "--purchase", "used_price": "--used-price", "usd_per_kwh": "--usd-per-kwh",
    "amortize_years": "--amortize-years", "owned_utilization": "--owned-utilization",
}  # fmt: skip


def check_pairs(args: argparse.Namespace) -> None:
    """Options that contradict each other are refused in one line naming both, before
    anything is predicted: dropping one unsaid prices a job the user did not describe."""
    sources = given(args, {k: v for k, v in JOB_OPTIONS.items() if v in SOURCE_OPTIONS})
    sizes = given(args, {k: v for k, v in JOB_OPTIONS.items() if v not in SOURCE_OPTIONS})
    failures = given(args, FAILURE_OPTIONS)
    if args.example == "articles":
        refuse_with("--example articles", [*sources, *sizes], "the example prices article "
                    "001's own job (its GPU-hours on its reference GPU)",
                    "drop --example to price your job, or drop the job's options.")  # fmt: skip
        refuse_with(
            "--example articles",
            failures,
            "the article leaves failures out, so a failure rate is never used",
            "drop --example, or the failure options.",
        )
    if args.gpu_hours is not None and not sources:  # with a source: "say what the job is"
        refuse_with("--gpu-hours", sizes, "GPU-hours on the reference GPU are "
                    "the whole job, already measured at its own batch and precision",
                    "give either --gpu-hours H, or a job (--workload, --model, --from-run) "
                    "with its size.")  # fmt: skip
    if args.no_failures:
        refuse_with(
            "--no-failures",
            failures,
            "failures are left out, so their rate, checkpoints and restarts are never used",
            "drop --no-failures to count failures, or drop the failure options.",
        )
    texts = [t.lower() for t in args.option]
    owned = [t for t in texts if "@owned" in t or "@used" in t]
    for attr, flag, word in (("purchase", "--purchase", "@owned"),
                             ("used_price", "--used-price", "@used")):  # fmt: skip
        if (
            owned
            and args.example is None
            and getattr(args, attr)
            and not any(word in t for t in owned)
        ):
            raise UserError(
                f"{flag} {','.join(getattr(args, attr))} prices GPUs bought "
                f"{'new' if word == '@owned' else 'used'}, but no --option is {word}, so it "
                "would be ignored.",
                f"add an option such as --option rtx-4090{word}, or drop {flag}.",
            )
    if args.example is None and not owned:
        for attr, flag in OWNED_OPTIONS.items():
            value = getattr(args, attr)
            if value not in (None, []):
                shown = ",".join(value) if isinstance(value, list) else f"{value:g}"
                raise UserError(
                    f"{flag} {shown} is an owned GPU's cost, but no --option is owned "
                    "(GPU@owned or GPU@used), so it would be ignored.",
                    f"add an owned option, e.g. --option rtx-4090@owned (new) or "
                    f"rtx-4090@used, or drop {flag}.",
                )


def check_reference_speedup(speedups: dict[str, float], catalog: Any, reference: Any) -> None:
    """The reference GPU is 1x itself by definition: another figure for it would rescale
    every option priced on it (100 GPU-hours on a 4090 becoming 20 h on that 4090)."""
    for name, value in speedups.items():
        if value != 1 and catalog.resolve(name).gpu.id == reference.id:
            raise UserError(
                f"--speedup {name}={value:g} and --reference {reference.id} contradict each "
                f"other: the reference GPU is 1x itself, the job's GPU-hours are on it.",
                "drop that --speedup, or give the job's hours on another --reference.",
            )


def _assumptions(args: argparse.Namespace) -> Any:
    from gpuscout.price import Assumptions

    given = {
        "power_utilization": args.power_utilization,
        "usd_per_kwh": args.usd_per_kwh,
        "amortize_years": args.amortize_years,
        "owned_utilization": args.owned_utilization,
        "checkpoint_hours": args.checkpoint_hours,
        "restart_minutes": args.restart_minutes,
        "failures_per_1000_gpu_hours_consumer": args.failures_consumer,
        "failures_per_1000_gpu_hours_datacenter": args.failures_datacenter,
        "delay_usd_per_day": args.delay_usd_per_day,
        "data_gb": args.data_gb,
    }
    # Each value is already in its option's range (cli/parser.py), named as the user typed it;
    # a value given is marked "(yours)" wherever it is printed.
    out = Assumptions().given(**given)
    return replace(out, failures=not args.no_failures)


def _job(args: argparse.Namespace, spec: Any, model: Any, reference: Any) -> Any:
    """The job to price: GPU-hours on the reference GPU, or a job's samples predicted."""
    from gpuscout.predict.job import resolve_job
    from gpuscout.price.options import gpu_hours_job, workload_job

    if not spec.given:
        return gpu_hours_job(args.gpu_hours, reference)
    job = resolve_job(spec, model.catalog)
    # each option's GPUs split one global batch, as advise splits it (yours, else the job's
    # own), unless -b fixes the batch per GPU on every option
    own = args.global_batch or job.global_batch or job.profile.batch
    total = None if fixed_batch(args) else own
    return workload_job(model, job.profile, job.samples, job.unit, reference, job.label,
                        global_batch=total)  # fmt: skip


def run_cost(args: argparse.Namespace) -> int:
    from gpuscout.catalog import load_catalog
    from gpuscout.cli.job_args import job_spec, prediction_session
    from gpuscout.core.articles import BY_KEY
    from gpuscout.core.units import fmt_hours, fmt_usd
    from gpuscout.price import cost_all
    from gpuscout.price.options import (
        build_options,
        parse_option,
        parse_pairs,
        scaling_assumption,
    )

    check_pairs(args)
    catalog = load_catalog(args.catalog)
    claimed: dict[tuple[str, int], tuple[float, float]] = {}
    if args.example == "articles":
        from gpuscout.catalog.articles_cost import articles_cost

        rows = articles_cost()
        args.gpu_hours = args.gpu_hours or COST_EXAMPLE_GPU_HOURS
        args.option = args.option or [r.option() for r in rows]
        args.speedup = args.speedup or sorted(
            {f"{r.gpu_id}={r.speedup_vs_reference:g}" for r in rows if r.speedup_vs_reference != 1}
        )
        args.scaling = args.scaling or [
            f"{r.gpu_id}x{r.count}={r.scaling_efficiency:g}" for r in rows if r.count > 1
        ]
        args.no_failures = True
        claimed = {(r.gpu_id, r.count): (r.claimed_hours, r.claimed_total_usd) for r in rows}
    reference = catalog.resolve(args.reference).gpu
    named = [args.workload, args.model, args.from_run]
    if (args.gpu_hours is None) == all(n is None for n in named):
        raise UserError(
            "say what the job is: --gpu-hours H (on the reference GPU), or --workload W, "
            "--model FILE.py:FUNCTION or --from-run ID with its size.",
            "e.g. --gpu-hours 1000 --reference rtx-3090, or --workload resnet50 --epochs 90.",
        )
    # Everything the user typed is checked before anything is predicted or priced, so a
    # missing price never hides a bad option (issue 17).
    texts = args.option or [f"{g}x{n}" for g in DEFAULT_OPTIONS.split(",") for n in (1, 8)]
    specs = [parse_option(t) for t in texts]
    speedups = parse_pairs(args.speedup, "--speedup", "SPEEDUP")
    check_reference_speedup(speedups, catalog, reference)
    scalings = parse_pairs(args.scaling, "--scaling", "EFFICIENCY")
    purchases = parse_pairs(args.purchase, "--purchase", "USD")
    used_prices = parse_pairs(args.used_price, "--used-price", "USD")
    assumptions = _assumptions(args)
    spec = job_spec(args)
    model = prediction_session(args, catalog, spec)  # the predictions every command makes
    job = _job(args, spec, model, reference)
    options = build_options(
        specs, model, reference, speedups, scalings, purchases, job, used_prices
    )
    lines, unpriced = cost_all(options, job.reference_gpu_hours, assumptions)
    for line in lines:
        if (line.gpu, line.count) in claimed:
            hours, usd = claimed[(line.gpu, line.count)]
            if abs(hours - line.hours) / line.hours > 0.02:
                line.notes.append(
                    f"article 001 says {hours:g} h / ${usd:,.0f}; its own speed and scaling "
                    f"give {fmt_hours(line.hours)} / {fmt_usd(line.total_usd)}"
                )
            else:
                line.notes.append(f"matches article 001 ({hours:g} h, ${usd:,.0f})")
    described = {"job": job.text}
    fitted = any(o.scaling_fitted for o in options)
    if job.profile is not None or fitted:  # said whenever a prediction sets a figure
        ranged = [model.range_note(job.profile)] if job.profile is not None else []
        fit = (
            model.describe(job.profile) if job.profile is not None else model.calibration.describe()
        )
        described["predictions"] = "; ".join([*model.notes, fit, *ranged])
        if job.profile is not None and (said := model.caveats(job.profile)):
            described["caveats"] = "; ".join(said)  # the GPU's own: in its option's notes
    if fitted:
        described["scaling"] = scaling_assumption(job)
    described |= assumptions.describe()
    if claimed:
        described["source"] = (
            f"the cost table of {BY_KEY['001'].cite()}, shipped as catalog/data/v1/"
            "articles_cost.csv: prices per hour as given; speed and scaling from the article "
            "itself (A100 1.78x an RTX 3090; 68% scaling on 4 x 3090 over PCIe, its 92% for "
            "8 x A100 over NVLink applied to 4); failures left out as the article does"
        )
    if args.json:
        shown = [line.to_json_dict() for line in lines]
        shown += [rest.to_json_dict() for rest in unpriced]  # money null, "unpriced": why
        out = {"assumptions": described, "inputs": assumptions.inputs(), "options": shown}
        print_json(out)
        return 0
    from gpuscout.report.console import stdout_console
    from gpuscout.report.cost_table import cost_table

    console = stdout_console()
    console.print(cost_table(lines, job.text, unpriced))
    for text in owned_lines(lines, assumptions):
        console.print(text, highlight=False)
    for key, text in described.items():
        console.print(f"assumption ({key}): {text}", highlight=False)
    return 0


def owned_lines(lines: list[Any], assumptions: Any) -> list[str]:
    """One line per owned option: its energy, electricity cost and break-even utilisation
    against the cheapest rental of as many (``price/break_even.py``), every input named."""
    out = []
    for line in lines:
        if line.provider != "owned":
            continue
        mine = " (yours)" if "usd_per_kwh" in assumptions.yours else ""
        head = (
            f"owned {line.count} x {line.gpu} ({line.condition or 'new'}): energy "
            f"{line.energy_kwh:,.1f} kWh, electricity ${line.energy_usd:,.2f} at "
            f"${assumptions.usd_per_kwh:g}/kWh{mine}"
        )
        even = line.break_even.describe() if line.break_even else "no rental to compare with"
        out.append(f"{head}; {even}")
    return out
