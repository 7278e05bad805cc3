"""``--cluster`` and ``--port-base``: the workers read from a cluster manager's variables.

Resolved before the run's config is built, into the very ``--workers``/``--task-index`` a user
could have typed (:mod:`gpuscout.scale.cluster`), so nothing downstream knows which way a
multi-worker run was started.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from gpuscout.core.ranges import int_in
from gpuscout.scale.cluster import DEFAULT_PORT_BASE, KINDS, MAX_PORT, MIN_PORT

PORT_BASE = int_in(MIN_PORT, MAX_PORT)  # no privileged port (below 1024)
TORCHRUN_MARKER = "TORCHELASTIC_RUN_ID"  # set by torchrun in every process it starts


def add_cluster_args(group: Any) -> None:
    group.add_argument(
        "--cluster",
        choices=KINDS,
        help="read the workers and this process's rank from the cluster manager: slurm "
        "(under srun), skypilot (num_nodes), tf-config (TF_CONFIG: Kubernetes, Ray Train), "
        "manual (--workers/--task-index), auto (the first of tf-config, slurm, skypilot "
        "that is set; none: one process)",
    )
    group.add_argument(
        "--port-base",
        type=PORT_BASE,
        metavar="PORT",
        help=f"with --cluster slurm/skypilot: worker i listens on PORT + the workers before it "
        f"on its host (default {DEFAULT_PORT_BASE})",
    )


def resolve_cluster(args: argparse.Namespace, say: bool) -> None:
    """Replace ``args.cluster`` by the ``args.workers``/``args.task_index`` it resolves to;
    print what was read on stderr when ``say``. UserError for a malformed environment, a
    contradiction, or more workers than this host can take."""
    from gpuscout.core.errors import UserError

    if args.cluster is None:
        if args.port_base is not None:
            raise UserError(
                f"--port-base {args.port_base} needs --cluster.",
                "pass --cluster slurm, skypilot or auto, or drop --port-base.",
            )
        return
    import psutil

    from gpuscout.core.limits import usable_cores
    from gpuscout.core.text import printable
    from gpuscout.scale import cluster

    workers = [w.strip() for w in args.workers.split(",") if w.strip()] if args.workers else None
    found = cluster.resolve(args.cluster, os.environ, args.port_base, workers, args.task_index)
    if found.source == "none":
        refuse_torchrun(os.environ)
    cluster.check_size(found, psutil.virtual_memory().available, usable_cores())
    args.workers = ",".join(found.workers) or None
    args.task_index = found.rank
    if say:  # the line holds the manager's values (host names, a node list): shown escaped
        print(f"cluster: {printable(found.line)}", file=sys.stderr)


def refuse_torchrun(environ: Mapping[str, str]) -> None:
    """UserError for ``--cluster auto`` that found no source in a process torchrun started:
    torchrun's variables name the master (whose port its agent's own store holds) but not every
    worker's address, which is what the cluster layer gives the frameworks; read as no
    cluster, each of its ranks would run and store a one-process run of its own."""
    from gpuscout.core.errors import UserError

    if not environ.get(TORCHRUN_MARKER, "").strip():
        return
    said = ", ".join(f"{v}={environ[v]!r}" for v in (TORCHRUN_MARKER, "RANK", "WORLD_SIZE")
                     if v in environ)  # fmt: skip
    raise UserError(
        f"--cluster auto under torchrun ({said[:200]}): torchrun's variables are not a source "
        "gpuscout reads (they name no worker's address but the master's).",
        "start one gpuscout bench per worker with srun, SkyPilot or TF_CONFIG (--cluster), "
        "or on one machine with gpuscout launch --workers N.",
    )
