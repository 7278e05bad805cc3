"""Latency statistics for ``bench --mode inference``: percentiles with intervals from raw
samples, the SLO search, and devices needed for a rate. Pure: no TensorFlow.

Each percentile's 95 % interval is the distribution-free order-statistic interval
(``scipy.stats.quantile_test``), exact for independent requests whatever their distribution.
With too few requests there is no such interval (for p99.9 that takes several thousand), and it
is reported as missing rather than guessed. A point *meets* the SLO when the upper bound of its
p99 is under it, so "meets" means "shown to meet", not "looked fast once".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from gpuscout.core.records import BenchConfig, Inference, Interval, LatencyPoint, RunResult
from gpuscout.measure.stats import CONFIDENCE, scipy_stats

PERCENTILES = {"p50_s": 0.50, "p90_s": 0.90, "p99_s": 0.99}
P999 = 0.999
MIN_P999 = 1000  # fewer requests than this: p99.9 is not reported at all


def quantile(samples: Sequence[float], q: float) -> Interval:
    """The ``q`` quantile of ``samples`` with its 95 % interval (bounds None where the sample
    is too small for one)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    if x.size == 0:
        raise ValueError("no samples")
    median = float(np.quantile(x, q, method="inverted_cdf"))
    ci = scipy_stats().quantile_test(x, q=median, p=q).confidence_interval(CONFIDENCE)
    low, high = float(ci.low), float(ci.high)
    return Interval(
        median=median,
        ci_low=None if math.isnan(low) or math.isinf(low) else low,
        ci_high=None if math.isnan(high) or math.isinf(high) else high,
    )


def point(
    path: str,
    batch: int,
    concurrency: int,
    latencies_s: Sequence[float],
    seconds: float,
    slo_s: float | None,
) -> LatencyPoint:
    """One row of the latency table from its raw per-request latencies."""
    if len(latencies_s) == 0 or not seconds > 0:
        raise ValueError("a latency point needs requests and a positive duration")
    qs = {name: quantile(latencies_s, q) for name, q in PERCENTILES.items()}
    p99 = qs["p99_s"]
    meets = None if slo_s is None else (p99.ci_high is not None and p99.ci_high <= slo_s)
    return LatencyPoint(
        path=path,
        batch_size=batch,
        concurrency=concurrency,
        requests=len(latencies_s),
        seconds=seconds,
        p999_s=quantile(latencies_s, P999) if len(latencies_s) >= MIN_P999 else None,
        samples_per_second=batch * len(latencies_s) / seconds,
        requests_per_second=len(latencies_s) / seconds,
        meets_slo=meets,
        **qs,
    )


def best(points: Sequence[LatencyPoint]) -> int | None:
    """The point that serves the most samples/s while meeting the SLO (ties: the smaller
    p99); None when no point meets it or there is no SLO."""
    meeting = [i for i, p in enumerate(points) if p.meets_slo]
    if not meeting:
        return None
    return max(meeting, key=lambda i: (points[i].samples_per_second, -points[i].p99_s.median))


def devices_needed(rate: float, at: LatencyPoint) -> int:
    """Devices, each run at ``at``, to serve ``rate`` samples/s (no headroom added)."""
    return max(1, math.ceil(rate / at.samples_per_second))


def inference_result(
    config: BenchConfig,
    device: str,
    name: str,
    served: Sequence[tuple[str, int, int, Sequence[float], float]],
    assumptions: list[str],
    env: dict[str, Any],
    peak_memory: tuple[int | None, str | None] = (None, None),
) -> RunResult:
    """The stored run of an inference measurement: its table, the best point under the SLO,
    the devices a rate needs, and warnings that say what to do.

    ``served``: (path, batch, concurrency, latencies, seconds) per point, in order. The raw
    latencies are kept, concatenated in that order, as the run's step times.
    """
    slo = config.slo_ms / 1000 if config.slo_ms else None
    points = [point(p, b, c, lat, s, slo) for p, b, c, lat, s in served]
    chosen = best(points)
    warnings = []
    if slo is not None and chosen is None:
        warnings.append(
            f"no point is shown to keep p99 under {config.slo_ms:g} ms (its interval's upper "
            "bound): try smaller batches or fewer clients, or measure longer (--seconds) if an "
            "interval is missing"
        )
    short = [p for p in points if p.p99_s.ci_high is None]
    if short:
        warnings.append(
            f"{len(short)} point(s) had too few requests for an interval on p99 (about 300 "
            "needed): raise --seconds"
        )
    top = points[chosen] if chosen is not None else max(points, key=lambda p: p.samples_per_second)
    needed = devices_needed(config.rate, top) if config.rate and chosen is not None else None
    if config.rate and chosen is not None:
        assumptions = [*assumptions, (
            f"devices needed = ceil({config.rate:g} samples/s / {top.samples_per_second:,.0f} "
            "samples/s at the best point), with no headroom for peaks"
        )]  # fmt: skip
    memory, memory_method = peak_memory
    return RunResult(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        status="ok",
        workload=name,
        device=device,
        precision=config.precision,
        xla=config.xla,
        loop="inference",
        batch_size=top.batch_size,
        samples_per_second=Interval(median=top.samples_per_second, ci_low=None, ci_high=None),
        measured_steps=sum(p.requests for p in points),
        stop_reason="budget",
        peak_memory_bytes=memory,
        memory_method=memory_method,
        warnings=warnings,
        assumptions=assumptions,
        config=config,
        backend=config.backend,
        env=env,
        mode="inference",
        inference=Inference(
            points=points, slo_s=slo, best=chosen, rate=config.rate, devices_needed=needed
        ),
        step_times_s=[float(x) for *_, lat, _s in served for x in lat],
    )
