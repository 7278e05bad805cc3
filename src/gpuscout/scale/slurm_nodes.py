"""A Slurm node list (``host[01-04,07],gpu-a[1-2]``): how many hosts it names, counted from
its ranges without expanding any, and its host names, in Slurm's order; and the tasks on each
node (``SLURM_TASKS_PER_NODE``'s ``2(x3),1``), each repeat bounded the same way.

Apart from :mod:`gpuscout.scale.cluster` because the text is a value from the environment that
must be bounded before it is expanded (issue 43: 250 ranges of 99,999 hosts in 3.5 KB were
2.3 GB expanded), and both halves are plain text work with no cluster in them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping

from gpuscout.core.errors import UserError
from gpuscout.core.ranges import NotWhole, whole
from gpuscout.scale.cluster_env import SRUN_FIX, first_set, whole_var

_GROUP = re.compile(r"\[([^\[\]]*)\]")  # a bracket group of a node list: [01-04,07]


def expand_nodelist(text: str) -> list[str]:
    """A Slurm node list (``host[01-04,07],gpu-a[1-2]``) as host names, in Slurm's order.

    python-hostlist parses it the way Slurm does; what it cannot parse goes to ``scontrol show
    hostnames`` where Slurm's own tool is installed (a syntax newer than the package's).
    """
    import hostlist  # type: ignore[import-untyped]

    try:
        return list(hostlist.expand_hostlist(text))
    except hostlist.BadHostlist as exc:
        scontrol = shutil.which("scontrol")
        if scontrol:
            # '--' first: the node list is a value from the environment, never an option
            done = subprocess.run(
                [scontrol, "--", "show", "hostnames", text],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            if done.returncode == 0 and done.stdout.split():
                return done.stdout.split()
        raise ValueError(str(exc)) from None


TOO_MANY = 10**19  # what a node list with an index past 10**18 counts as: over every cap


def count_nodelist(text: str) -> int | None:
    """How many hosts a Slurm node list names, read from its ranges without expanding any
    (``n1x[1-99999]`` is 99,999); None where it is not the bracket syntax counted here (the
    expander then says what is wrong with it)."""
    total = 0
    for item in _top_level(text):
        if "[" in _GROUP.sub("", item) or "]" in _GROUP.sub("", item):
            return None  # unbalanced or nested brackets
        names = 1
        for group in _GROUP.findall(item):
            size = 0
            for part in group.split(","):
                low, dash, high = part.partition("-")
                try:
                    first = whole(low, 0, 10**18)
                    last = whole(high, 0, 10**18) if dash else first
                except NotWhole as exc:
                    if exc.out_of_range:  # an index past 10**18: more names than any cap,
                        return TOO_MANY  # never None, which would hand it to the expander
                    return None
                if last < first:
                    return None
                size += last - first + 1
            names *= size
        total += names
    return total


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (a node list's hosts and host ranges)."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item for item in items if item.strip()]


__all__ = ["TOO_MANY", "count_nodelist", "expand_nodelist"]


def tasks_per_node(env: Mapping[str, str], nodes: int, ntasks: int) -> tuple[list[int], str]:
    """Tasks on each node, and the variable that said so (as shown in errors)."""
    name, text = first_set(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", need=False)
    if text:
        counts = _task_counts(name, text, nodes)
        return counts, f"{name}={text}"
    if text := env.get("SLURM_NTASKS_PER_NODE", "").strip():
        each = whole_var("SLURM_NTASKS_PER_NODE", text, 1)
        return [each] * nodes, f"SLURM_NTASKS_PER_NODE={text}"
    if ntasks == nodes:
        return [1] * nodes, "one task per node"
    raise UserError(
        f"SLURM_TASKS_PER_NODE is not set and {ntasks} tasks do not fall one per node "
        f"on {nodes} nodes.",
        SRUN_FIX + ".",
    )


# One item of a Slurm task count list: "2", or "2(x3)" for three nodes of two tasks each.
_TASK_COUNT = re.compile(r"\s*([0-9]+)\s*(?:\(\s*x\s*([0-9]+)\s*\))?\s*")


def _task_counts(name: str, text: str, nodes: int) -> list[int]:
    """``2(x3),1`` -> [2, 2, 2, 1], as Slurm writes SLURM_TASKS_PER_NODE; each repeat bounded
    by the ``nodes`` of the node list before it is expanded (``1(x999999999)`` would be a
    billion-item list), so a list longer than the node list stops at the first node too many
    (the caller then names the mismatch)."""
    counts: list[int] = []
    for item in text.split(","):
        m = _TASK_COUNT.fullmatch(item)
        if m is None:
            raise UserError(
                f"{name}={text!r} is not a Slurm task count list.",
                "set it as Slurm writes it, e.g. 2(x3),1 (or " + SRUN_FIX + ").",
            )
        each = whole_var(name, m.group(1), 1)
        times = whole_var(name, m.group(2), 1) if m.group(2) else 1
        counts.extend([each] * min(times, nodes + 1 - len(counts)))
        if len(counts) > nodes:
            break
    return counts
