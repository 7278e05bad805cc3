"""``bench --scaling 1,2,4``: the same run on 1, 2, 4 devices in turn, and how well it scales.

Each count runs in its own measuring process (a strategy's devices are fixed when TensorFlow
starts), is stored the moment it ends, and carries its scaling efficiency against the
smallest count that succeeded: throughput(n) / (n / base x throughput(base)).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from gpuscout.core.errors import UserError
from gpuscout.core.records import BenchConfig, RunResult, Scaling
from gpuscout.measure.benchmark import INTERRUPTED, check
from gpuscout.measure.protocol import Progress
from gpuscout.measure.runner import run_isolated
from gpuscout.scale import distribute


def sweep_configs(config: BenchConfig, counts: list[int]) -> list[BenchConfig]:
    """One config per count, on the first n of ``--devices`` (all of them by default)."""
    if config.workers:
        raise UserError(
            "--scaling with --workers: a sweep runs on one machine's devices.",
            "use --devices with --scaling; for workers, run 'gpuscout launch' per count.",
        )
    if config.device:
        raise UserError("--scaling with --device.", "use --devices (a count or a list).")
    spec = distribute.parse_devices(config.devices) if config.devices else max(counts)
    available = spec if isinstance(spec, int) else len(spec)
    if max(counts) > available:
        raise UserError(
            f"--scaling {','.join(map(str, counts))} goes beyond the {available} device(s) "
            f"of --devices {config.devices}.",
            f"pass --devices {max(counts)} or drop the larger counts.",
        )
    out = []
    for n in counts:
        devices = str(n) if isinstance(spec, int) else ",".join(spec[:n])
        out.append(config.model_copy(update={"devices": devices}))
    for one in out:
        check(one)  # an uneven --global-batch-size fails here, before any run
    return out


def scaling_sweep(
    config: BenchConfig,
    counts: list[int],
    save: Callable[[RunResult], RunResult],
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """Run ``config`` on each device count, ``save`` each result as it ends, return them all.

    A count that fails is stored as failed and the sweep goes on; Ctrl-C stops it after
    storing what the interrupted run measured.
    """
    configs = sweep_configs(config, counts)
    sweep_id = uuid.uuid4().hex[:12]
    base: RunResult | None = None
    results = []
    for n, one in zip(counts, configs, strict=True):
        if on_phase:
            on_phase(f"{n} device(s)")
        result = run_isolated(one, on_progress, on_phase)
        spread = result.distribution
        if result.status == "ok" and spread is not None and result.samples_per_second:
            if base is None:
                scaling = Scaling(sweep=sweep_id, base_replicas=n, base_run_id=None)
            else:
                assert base.distribution is not None and base.samples_per_second is not None
                scaling = Scaling(
                    sweep=sweep_id,
                    base_replicas=base.distribution.replicas,
                    base_run_id=base.id,
                    efficiency=distribute.efficiency(
                        base.samples_per_second,
                        base.distribution.replicas,
                        result.samples_per_second,
                        spread.replicas,
                    ),
                )
            result = result.model_copy(
                update={"distribution": spread.model_copy(update={"scaling": scaling})}
            )
        result = save(result)
        results.append(result)
        if base is None and result.status == "ok" and result.distribution is not None:
            base = result
        if result.message == INTERRUPTED:
            break
    return results
