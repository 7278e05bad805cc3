"""Latency statistics on known sample sets and constructed curves: percentiles and their
intervals, the SLO search, devices for a rate, and what an inference run stores."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscout.core.comparison import compare
from gpuscout.core.records import BenchConfig
from gpuscout.measure.latency import best, devices_needed, inference_result, point, quantile
from gpuscout.report.latency_table import latency_table
from tests.store.test_store import _result


def test_percentiles_of_a_known_sample() -> None:
    samples = np.arange(1, 10_001) / 1000  # 1 ms .. 10 s, evenly: the q-quantile is 10q s
    for q in (0.5, 0.9, 0.99, 0.999):
        i = quantile(samples, q)
        assert i.median == pytest.approx(10 * q, abs=0.002)
        assert i.ci_low is not None and i.ci_high is not None
        assert i.ci_low <= i.median <= i.ci_high
    p99 = quantile(samples, 0.99)  # order statistics: ~ +-20 ranks of 10,000 either side
    assert p99.ci_high - p99.ci_low == pytest.approx(0.04, abs=0.01)  # type: ignore[operator]


def test_too_few_samples_leave_the_interval_open_not_guessed() -> None:
    samples = list(np.linspace(0.001, 0.01, 50))
    p99 = quantile(samples, 0.99)
    assert p99.ci_high is None and p99.median == pytest.approx(0.01)
    assert point("tf.function", 1, 1, samples, 1.0, None).p999_s is None  # < 1000 requests
    with pytest.raises(ValueError):
        quantile([], 0.5)


def _curve(slo_ms: float | None) -> list:  # type: ignore[type-arg]
    """Batch b with c clients: latency grows with b and c, throughput too, then saturates."""
    rng = np.random.default_rng(1)
    out = []
    for b in (1, 8, 32):
        for c in (1, 4):
            base = 0.002 + 0.0009 * b * c  # seconds
            lat = base * (1 + 0.1 * rng.random(2000))
            seconds = base * 2000 / c
            out.append(point("tf.function", b, c, lat, seconds, slo_ms / 1000 if slo_ms else None))
    return out


def test_slo_search_picks_the_most_throughput_shown_under_the_target() -> None:
    points = _curve(30.0)  # p99 = 1.1 x (2 + 0.9 b c) ms: under 30 ms for b*c <= 30
    meets = [(p.batch_size, p.concurrency) for p in points if p.meets_slo]
    assert meets == [(1, 1), (1, 4), (8, 1)]  # 8x4=32 and 32x1 are over 30 ms
    chosen = points[best(points) or 0]
    assert (chosen.batch_size, chosen.concurrency) == (8, 1)  # the most samples/s of those
    assert best(_curve(1.0)) is None  # nothing meets 1 ms
    assert best(_curve(None)) is None  # no SLO, no best point
    assert devices_needed(10_000, chosen) == int(np.ceil(10_000 / chosen.samples_per_second))


def test_an_inference_run_stores_its_table_and_raw_latencies() -> None:
    config = BenchConfig(mode="inference", batch_sizes=[1, 8], slo_ms=1.0, rate=5000.0)
    served = [("tf.function", 1, 1, [0.002] * 400, 1.0), ("tf.function", 8, 1, [0.004] * 400, 1.6)]
    run = inference_result(config, "CPU:0", "mlp", served, ["a"], {})
    assert run.mode == "inference" and run.inference is not None
    assert run.step_times_s == [0.002] * 400 + [0.004] * 400  # raw samples, in order
    assert run.inference.best is None and run.inference.devices_needed is None
    assert "no point is shown to keep p99 under 1 ms" in run.warnings[0]
    assert run.samples_per_second is not None and run.samples_per_second.median == 2000.0
    comparison = compare(_result(), run.model_copy(update={"workload": "mlp"}))
    assert not comparison.comparable
    assert "mode" in [d.what for d in comparison.differences if d.blocks]


def test_the_table_says_not_shown_where_too_few_requests_support_a_figure() -> None:
    rng = np.random.default_rng(2)
    config = BenchConfig(mode="inference", batch_sizes=[1, 8, 32, 64], slo_ms=50.0)
    served = [  # (path, batch, clients, latencies, seconds): p99 under / over the 50 ms SLO
        ("tf.function", 1, 1, list(0.002 + 0.008 * rng.random(50)), 1.0),  # 50: no p99 bound
        ("tf.function", 8, 1, list(0.004 + 0.002 * rng.random(2000)), 10.0),  # shown under
        ("tf.function", 32, 1, list(0.080 + 0.010 * rng.random(2000)), 170.0),  # shown over
        ("tf.function", 64, 1, list(0.200 + 0.010 * rng.random(50)), 10.0),  # over, no bound
    ]
    run = inference_result(config, "CPU:0", "mlp", served, [], {})
    assert run.inference is not None
    few = run.inference.points[0]
    assert few.p99_s.ci_high is None and few.p999_s is None and few.meets_slo is False
    table = latency_table(run)
    column = {str(c.header): [str(cell) for cell in c._cells] for c in table.columns}
    assert column["p99 < 50 ms"] == ["not shown (too few requests)", "yes", "no", "no"]
    assert column["p99.9"][0] == "not shown (too few requests)"
    assert column["p99.9"][1].endswith("ms")  # 2,000 requests: shown
    assert column["p99 [95% CI]"][0].endswith("- not shown]")  # a lower bound, no upper
    assert column["p99 [95% CI]"][1].count("ms") == 3  # median and both bounds
