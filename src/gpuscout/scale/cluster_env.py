"""Reading a cluster manager's variables: the first of several that is set, one that must be,
and a count by the one strict parser. A leaf of ``scale/`` (``cluster.py`` and
``slurm_nodes.py`` read through it), so each variable is read, and refused, the same way."""

from __future__ import annotations

from collections.abc import Mapping

from gpuscout.core.errors import UserError
from gpuscout.core.ranges import NotWhole, whole

# The most a count variable may say before it is compared with the lists it counts: nine digits,
# as Slurm's own 32-bit counters (a larger value is refused as malformed, not as too many).
MAX_COUNT = 999_999_999
SRUN_FIX = "start every task with srun (srun gpuscout bench --cluster slurm ...), which sets them"


def first_set(env: Mapping[str, str], *names: str, need: bool = True) -> tuple[str, str]:
    """The first of ``names`` set in ``env`` (name, value); UserError if none and ``need``."""
    for name in names:
        if value := env.get(name, "").strip():
            return name, value
    if need:
        raise UserError(f"{' / '.join(names)} is not set.", SRUN_FIX + ".")
    return names[0], ""


def need(env: Mapping[str, str], name: str) -> str:
    """The value of ``name``; UserError naming the manager that sets it when it is unset."""
    if value := env.get(name, "").strip():
        return value
    if name.startswith("SLURM"):
        raise UserError(
            f"{name} is not set: this is not a task of a Slurm job step.", SRUN_FIX + "."
        )
    where = "SkyPilot (sky launch with num_nodes)" if name.startswith("SKY") else "TF_CONFIG"
    raise UserError(f"{name} is not set.", f"run under {where}, or pick another --cluster.")


def whole_var(name: str, text: str, least: int) -> int:
    """``text`` (the value of variable ``name``) as a whole number from ``least`` to
    :data:`MAX_COUNT`, by the one strict parser (:func:`gpuscout.core.ranges.whole`: ASCII digits
    only, so ``SLURM_PROCID=²`` is refused here rather than end in ``int()``'s traceback)."""
    try:
        return whole(text, least, MAX_COUNT)
    except NotWhole:
        raise UserError(
            f"{name}={text!r} is not a whole number of at least {least} (ASCII digits 0-9, "
            f"at most {MAX_COUNT:,}).",
            "set it as the cluster manager does, or pick another --cluster.",
        ) from None
