"""The ``gpuscout bench`` a cloud plan runs on each node, parsed here as the node will parse
it (issue 43): options only in full, none the plan sets itself, its time budget, and your
model's and data's folders sent with it. Apart from ``cli/cloud.py``, which registers and runs
the cloud commands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gpuscout.core.errors import UserError

if TYPE_CHECKING:
    from gpuscout.cloud.plan import Bench

SET_BY_PLAN = ("--db", "--workers", "--task-index", "--cluster")
SET_BY_PLAN_DESTS = tuple(o[2:].replace("-", "_") for o in SET_BY_PLAN)  # bench's dests


def _bench_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``bench`` subcommand's own parser inside gpuscout's."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices["bench"]  # type: ignore[no-any-return]
    raise AssertionError("gpuscout's parser has no bench command")


def check_forwarded(tokens: list[str], bench: argparse.ArgumentParser) -> None:
    """Each option forwarded to the node in full, and none the plan sets itself.

    argparse takes ``--task-i`` for ``--task-index`` and ``--clus`` for ``--cluster``: an
    abbreviation would slip past a check of the full names, then collide on the node with
    what the plan sets, after start-up and install were billed. So, as
    ``argparse(allow_abbrev=False)`` would, an abbreviation is refused naming the option in
    full, and an option the plan sets is refused however it is spelled."""
    known = bench._option_string_actions
    for token in tokens:
        if token == "--":
            return  # what follows is values, not options
        if not token.startswith("-") or token == "-":
            continue
        name = token.partition("=")[0] if token.startswith("--") else token[:2]
        action = known.get(name)
        if action is None:
            full = sorted(o for o in known if o.startswith(name)) if token.startswith("--") else []
            if full:
                raise UserError(
                    f"bench {name}: an abbreviation of {' or '.join(full)}; the plan forwards "
                    "options only in full.",
                    f"write it in full: {full[0]}.",
                )
            continue  # a negative number, or unknown: bench's own parser says which
        if action.dest in SET_BY_PLAN_DESTS:
            raise UserError(f"bench {name}: the plan sets it on each node.",
                            "drop it from the bench options.")  # fmt: skip


def bench_of(tokens: list[str]) -> Bench:
    """The bench after ``--``, checked by bench's own parser, with its time budget and your
    model's and data's folders sent to each node."""
    from gpuscout.cli import build_parser
    from gpuscout.cli.bench import DEFAULT_SECONDS
    from gpuscout.cloud.inputs import Shipped, ship
    from gpuscout.cloud.plan import Bench

    tokens = tokens[1:] if tokens[:1] == ["--"] else tokens
    if tokens[:1] != ["bench"]:
        raise UserError(
            "cloud plan runs 'gpuscout bench' on each GPU: give it after --"
            + (f" (got '{tokens[0]}')." if tokens else "."),
            "e.g. gpuscout cloud plan --gpus l4 -- bench --workload resnet50 --seconds 120.",
        )
    parser = build_parser()
    bench_parser = _bench_parser(parser)
    check_forwarded(tokens[1:], bench_parser)
    bench_parser.allow_abbrev = False  # parsed here as the node will parse it: in full
    ns = parser.parse_args(tokens)  # bench's own one-line errors, exit 2
    for dest in SET_BY_PLAN_DESTS:  # however it was spelled
        if getattr(ns, dest) != bench_parser.get_default(dest):
            raise UserError(f"bench --{dest.replace('_', '-')}: the plan sets it on each node.",
                            "drop it from the bench options.")  # fmt: skip
    if ns.model is None:  # a typo found here, not after minutes of renting
        from gpuscout.workloads import get_workload

        get_workload(ns.workload)
    if ns.steps and not ns.seconds:
        raise UserError(
            f"bench --steps {ns.steps} alone has no time budget, so the plan cannot cap it.",
            "add --seconds S, the budget bench never exceeds.",
        )
    seconds = ns.seconds or DEFAULT_SECONDS
    how = f"bench --seconds {seconds:g}" + ("" if ns.seconds else " (bench's default)")
    measure = seconds
    counts: list[int] = []
    if ns.scaling:
        from gpuscout.scale.distribute import parse_counts

        counts = parse_counts(ns.scaling)
        measure, how = seconds * len(counts), f"{how} x {len(counts)} counts of bench --scaling"
    if ns.mode == "inference":
        from gpuscout.measure.serving import DEFAULT_BATCH_SIZES, plan

        paths = ["function", "saved_model"] if ns.serving == "both" else [ns.serving]
        p = plan(ns.batch_sizes or DEFAULT_BATCH_SIZES, ns.concurrency or [1], paths, seconds)
        points = len(p.batch_sizes) * len(p.concurrency) * len(paths)
        measure, how = points * p.seconds_per_point, f"{how}: {points} serving points"
    args, shipped = list(tokens[1:]), list[Shipped]()
    for flag, value in (("--model", ns.model), ("--data", ns.data)):
        if value is None:
            continue
        remote = ship(flag, value, shipped)  # the file's folder: its neighbours travel too
        args = [_replace(a, flag, value, remote) for a in args]
    from gpuscout.cli.parser import resolved_backend

    backend = resolved_backend(ns.backend, ns.model)  # a plain PyTorch model installs torch
    if ns.devices is None and not ns.scaling and backend != "torch":  # torch: one device
        args += ["--devices", "{gpus_per_node}"]  # filled in per candidate
    return Bench(tuple(args), measure, how, tuple(shipped), backend, tuple(counts))


def _replace(token: str, flag: str, value: str, new: str) -> str:
    if token == value:
        return new
    return f"{flag}={new}" if token == f"{flag}={value}" else token


__all__ = ["SET_BY_PLAN", "bench_of", "check_forwarded"]
