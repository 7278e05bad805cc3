"""The doctor's and soak's arithmetic on planted timings: verdicts, speedups, ranking, search."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpuscout.core.records import GpuSummary, MonitorSummary
from gpuscout.diagnose.analysis import analyse, helped, measured_fix, rank, timing_of
from gpuscout.diagnose.records import Fix, SoakConfig, Timing, verdict_for
from gpuscout.diagnose.soak import drift_verdict, judge, window_noise
from gpuscout.measure.batch_search import largest_fitting
from gpuscout.measure.stats import mean_ci


def _t(label: str, mean_s: float, batch: int = 100, half: float = 0.01) -> Timing:
    return Timing(
        label=label,
        mean_s=mean_s,
        ci_low_s=mean_s * (1 - half),
        ci_high_s=mean_s * (1 + half),
        median_s=mean_s,
        steps=50,
        batch_size=batch,
        samples_per_second=batch / mean_s,
    )


@pytest.mark.parametrize(
    ("step", "together", "verdict"),
    [
        (0.010, 0.100, "input-bound (highly)"),  # 90% waiting
        (0.010, 0.0125, "input-bound (highly)"),  # 20% exactly
        (0.010, 0.0110, "input-bound (moderately)"),  # 9%
        (0.010, 0.0104, "device-bound"),  # 4%
        (0.010, 0.0099, "device-bound"),  # noise under the bare step: no negative wait
    ],
)
def test_the_verdict_follows_the_wait_fraction(step: float, together: float, verdict: str) -> None:
    a = analyse(_t("data", 0.09), _t("step", step), _t("loop", together))
    assert a.verdict == verdict
    assert 0.0 <= a.input_wait_fraction < 1.0


def test_the_explanation_says_whether_prefetch_alone_can_help() -> None:
    slow_data = analyse(_t("data", 0.09), _t("step", 0.01), _t("loop", 0.10))
    assert "the pipeline itself must get faster" in slow_data.explanation
    not_overlapped = analyse(_t("data", 0.008), _t("step", 0.01), _t("loop", 0.018))
    assert "prefetch lets the next batch" in not_overlapped.explanation


def test_a_speedup_is_the_ratio_of_the_measured_times_per_sample() -> None:
    base = _t("baseline", 0.100, batch=100)  # 1 ms per sample
    bigger = _t("batch 400", 0.200, batch=400)  # 0.5 ms per sample
    fix = measured_fix("batch size 400", base, bigger, "code")
    assert fix.speedup == pytest.approx(2.0)
    assert fix.speedup_low is not None and fix.speedup_high is not None
    assert fix.speedup_low < 2.0 < fix.speedup_high
    assert fix.samples_per_second == pytest.approx(2000.0)
    eager = measured_fix("tf.function", base, _t("eager", 0.300), "code", in_baseline=True)
    assert eager.speedup == pytest.approx(3.0) and eager.in_baseline


def test_ranking_puts_fixes_to_apply_first_then_the_baselines_then_skipped() -> None:
    def f(name: str, speedup: float | None, in_baseline: bool = False) -> Fix:
        status = "measured" if speedup is not None else "skipped"
        return Fix(name=name, speedup=speedup, status=status, code="", in_baseline=in_baseline)

    ranked = rank([f("a", 1.1), f("skip", None), f("tf.function", 5.0, True), f("b", 3.0)])
    assert [x.name for x in ranked] == ["b", "a", "tf.function", "skip"]
    assert helped(f("b", 3.0)) and not helped(f("a", 1.01))
    assert not helped(Fix(name="x", speedup=1.5, speedup_low=0.9, code=""))


def test_batch_search_finds_the_limit_within_tolerance_and_never_passes_the_bound() -> None:
    calls: list[int] = []

    def fits(b: int) -> bool:
        calls.append(b)
        return b <= 700

    best, tried = largest_fitting(fits, start=64, limit=4096)
    assert best is not None and 700 * 7 / 8 <= best <= 700
    assert all(b <= 4096 for b in calls) and len(calls) <= 12
    assert [b for b, ok in tried] == calls
    capped, tried = largest_fitting(lambda b: True, start=64, limit=300)
    assert capped == 300 and [b for b, _ in tried] == [128, 256, 300]
    nothing, tried = largest_fitting(lambda b: False, start=64, limit=512)
    assert nothing == 64 and tried and not any(ok for _, ok in tried)


def test_mean_interval_covers_the_mean_and_widens_with_noise() -> None:
    rng = np.random.default_rng(1)
    quiet = 0.01 + rng.normal(0, 0.0001, 400)
    noisy = 0.01 + rng.normal(0, 0.002, 400)
    ql, qh = mean_ci(quiet)
    nl, nh = mean_ci(noisy)
    assert ql < quiet.mean() < qh and nl < noisy.mean() < nh
    assert (nh - nl) > 5 * (qh - ql)
    assert all(np.isnan(mean_ci([0.1, 0.1, 0.1])))


def test_one_slow_step_among_few_widens_the_interval_instead_of_losing_it() -> None:
    """Eight steps, one five times slower (a busy machine): the t-interval of four block means
    reaches below zero. Reported as none before, as if too few steps had run (CI: the doctor's
    cache fix lost its range); now its lower end is the fastest step, and a fix ten times
    faster than its baseline is still shown faster, with a wide range."""
    trial = [0.01] * 7 + [0.05]
    assert mean_ci(trial)[0] < 0  # the case
    t = timing_of("cache", trial, batch=128)
    assert t.ci_low_s == 0.01 and t.ci_high_s is not None and t.ci_high_s > t.mean_s
    base = timing_of("baseline", [0.1, 0.11, 0.1, 0.12, 0.1, 0.11, 0.1, 0.1], batch=128)
    fix = measured_fix("cache", base, t, "dataset = dataset.cache()")
    assert fix.speedup_low is not None and fix.speedup_high is not None
    assert 1.0 < fix.speedup_low < fix.speedup < fix.speedup_high
    assert timing_of("few", [0.01, 0.01, 0.01], batch=8).ci_low_s is None  # too few: none


def _raw(first: list[float], last: list[float], **extra: object) -> dict[str, object]:
    blocks = [[i + 1.0, 100, 0.1 * (1 + 0.01 * (i % 2))] for i in range(60)]
    return {
        "workload": "mlp",
        "device": "CPU:0",
        "device_name": "cpu",
        "batch_size": 10,
        "seconds": 60.0,
        "steps": 6000,
        "window_seconds": 6.0,
        "first_times": first,
        "last_times": last,
        "blocks": blocks,
        **extra,
    }


STEADY = [0.001] * 500


def test_a_steady_finite_run_passes_with_its_evidence() -> None:
    r = judge(_raw(STEADY, STEADY), SoakConfig(minutes=1), None)
    assert r.verdict == "pass" and r.reasons == []
    assert any("loss finite at every one of 6,000 steps" in e for e in r.evidence)
    assert r.drift == pytest.approx(0.0)


def test_nan_loss_oom_and_a_real_slowdown_each_fail_the_soak() -> None:
    cfg = SoakConfig(minutes=1)
    nan = judge(_raw(STEADY, STEADY, bad_losses=1, first_bad_step=4711), cfg, None)
    assert nan.verdict == "fail" and "NaN/Inf at step 4711" in nan.reasons[0]
    oom = judge(_raw(STEADY, [], error="out of memory: OOM when allocating"), cfg, None)
    assert oom.verdict == "fail" and "out of memory" in oom.reasons[0]
    slow = judge(_raw(STEADY, [0.0015] * 500), cfg, None)  # 33% slower, noise ~1%
    assert slow.verdict == "fail" and "sank 33.3%" in slow.reasons[0]


def test_a_broken_training_fails_the_soak_and_is_stored_as_diverged() -> None:
    """A NaN loss, or weights NaN behind a finite loss (the backend's check when the loop
    ends): the verdict fails, and the stored run is "diverged", kept out of calibration like
    bench's, not "ok"."""
    from gpuscout.diagnose.soak import _as_run

    cfg = SoakConfig(minutes=1)
    hidden = "the loss stayed finite, but 1 of 4 weight tensors hold NaN/Inf at the end"
    for raw in (_raw(STEADY, STEADY, bad_losses=3, first_bad_step=9),
                _raw(STEADY, STEADY, broken_weights=hidden)):  # fmt: skip
        report = judge(raw, cfg, None)
        assert report.verdict == "fail", report.reasons
        run = _as_run(report, raw, cfg, None, {})
        assert run.status == "diverged" and run.message == "; ".join(report.reasons)
    assert hidden in judge(_raw(STEADY, STEADY, broken_weights=hidden), cfg, None).reasons
    steady = _as_run(judge(_raw(STEADY, STEADY), cfg, None), _raw(STEADY, STEADY), cfg, None, {})
    assert steady.status == "ok"


def _noisy(raw: dict[str, object], sigma: float, seed: int = 7) -> float:
    """Give ``raw`` 240 one-second blocks whose 6-second windows wander by ``sigma`` (seeded,
    so the same every run); return the noise the soak measures from them."""
    rng = np.random.default_rng(seed)
    wander = 1 + sigma * rng.standard_normal(40)  # one factor per 7-block window
    raw["blocks"] = [[i + 1.0, 100, 0.1 * float(wander[i // 7])] for i in range(240)]
    noise = window_noise(raw["blocks"], 6.0)  # type: ignore[arg-type]
    assert noise is not None
    return noise


def _first_last(drop: float) -> tuple[list[float], list[float]]:
    """A first and a last window whose throughput differs by ``drop`` (0.26: 26 % slower)."""
    return STEADY, [0.001 / (1 - drop)] * 500


def test_a_drop_the_noise_could_hide_or_fake_is_inconclusive_never_a_pass() -> None:
    """The issue's case: a 26 % drop "within this machine's noise" was called PASS."""
    raw = _raw(*_first_last(0.26))
    noise = _noisy(raw, 0.10)
    assert -0.26 + 3 * noise > -0.10  # the band reaches inside the limit: nothing shown
    r = judge(raw, SoakConfig(minutes=10), None)
    assert r.verdict == "inconclusive" and r.noise == pytest.approx(noise)
    [reason] = r.reasons
    assert "sank 26.0%" in reason and f"+-{noise:.1%} a window" in reason
    assert "to decide" in reason and "a machine nothing else runs on" in reason
    assert any(e.startswith("throughput: first window") and "-26.0%" in e for e in r.evidence)


def test_a_small_drop_on_a_noisy_machine_is_inconclusive_too() -> None:
    """-5 % is inside the 10 % limit, but +-3x the noise reaches beyond it: not ruled out."""
    raw = _raw(*_first_last(0.05))
    noise = _noisy(raw, 0.05)
    assert -0.05 - 3 * noise < -0.10
    r = judge(raw, SoakConfig(minutes=10), None)
    assert r.verdict == "inconclusive"
    assert "could hide the 10% drop tested for (--max-drift)" in r.reasons[0]


def test_pass_needs_the_data_to_rule_the_drop_out() -> None:
    raw = _raw(*_first_last(0.05))
    noise = _noisy(raw, 0.005)
    assert -0.05 - 3 * noise > -0.10
    r = judge(raw, SoakConfig(minutes=10), None)
    assert r.verdict == "pass" and r.reasons == []
    assert any("a drop beyond 10% is ruled out: -5.0%" in e for e in r.evidence)


def test_fail_needs_the_drop_shown_beyond_the_noise() -> None:
    raw = _raw(*_first_last(0.40))
    noise = _noisy(raw, 0.05)
    assert -0.40 + 3 * noise < -0.10
    r = judge(raw, SoakConfig(minutes=10), None)
    assert r.verdict == "fail"
    assert "sank 40.0%" in r.reasons[0] and "even allowing for this machine's noise" in r.reasons[0]


def test_unmeasured_noise_decides_nothing() -> None:
    """Fewer than 4 windows: no noise figure, so no pass (nor a fail) on the drift."""
    for drop in (0.0, 0.5):
        raw = _raw(*_first_last(drop))
        raw["blocks"] = [[i + 1.0, 100, 0.1] for i in range(15)]  # 2 windows of 7 blocks
        r = judge(raw, SoakConfig(minutes=0.25), None)
        assert r.verdict == "inconclusive" and r.noise is None
        assert "too short to measure" in r.reasons[0] and "--minutes 1" in r.reasons[0]


def test_a_fault_still_fails_when_the_drift_is_undecided() -> None:
    raw = _raw(*_first_last(0.26), bad_losses=1, first_bad_step=9)
    _noisy(raw, 0.10)
    r = judge(raw, SoakConfig(minutes=10), None)
    assert r.verdict == "fail" and "NaN/Inf at step 9" in r.reasons[0]
    assert any(e.startswith("drift: ") and "to decide" in e for e in r.evidence)


@pytest.mark.parametrize(
    ("drift", "noise", "verdict"),
    [
        (-0.40, 0.05, "fail"),  # -40 % +- 15 %: beyond -10 % at its upper end
        (-0.26, 0.05, "fail"),  # -26 % +- 15 %: -11 % at its upper end
        (-0.26, 0.06, "inconclusive"),  # +- 18 %: -8 % at its upper end
        (-0.11, 0.001, "fail"),  # a quiet machine shows even a small excess
        (-0.09, 0.001, "pass"),
        (-0.05, 0.02, "inconclusive"),  # -5 % - 3 x 2 % = -11 %: not ruled out
        (-0.05, 0.015, "pass"),  # -9.5 % at its lower end: ruled out
        (0.20, 0.11, "inconclusive"),  # faster at the end, but +- 33 % reaches -13 %
        (0.0, 0.0, "pass"),
    ],
)
def test_the_drift_verdict_at_its_boundaries(drift: float, noise: float, verdict: str) -> None:
    found, _ = drift_verdict(drift, noise, 0.10, 10.0)
    assert found == verdict


def test_what_would_decide_an_inconclusive_soak() -> None:
    """The noise a decision needs is the drift's distance from the limit over 3; a window's
    random noise falls as 1/sqrt(its length), and windows grow with the run up to 100 min."""
    # -5 % with +-3 % noise: needs +-1.67 %, so (3 / 1.67)^2 = 3.24x the 10 minutes
    _, text = drift_verdict(-0.05, 0.03, 0.10, 10.0)
    assert "soak about 33 minutes (--minutes 33" in text and "noise below +-1.7%" in text
    # the same from an hour: 194 minutes, past the point where the windows stop growing
    _, text = drift_verdict(-0.05, 0.03, 0.10, 60.0)
    assert "a longer soak alone will not" in text and "--minutes" not in text
    # a limit given as 2.5 % is said as 2.5 %, not rounded to 2 %
    _, text = drift_verdict(-0.01, 0.01, 0.025, 10.0)
    assert "the 2.5% drop tested for" in text


def test_the_terminal_says_what_inconclusive_means() -> None:
    import io

    from rich.console import Console

    from gpuscout.report.soak_view import print_soak

    raw = _raw(*_first_last(0.26))
    _noisy(raw, 0.10)
    out = io.StringIO()
    print_soak(judge(raw, SoakConfig(minutes=10), None), 7, Console(file=out, width=300))
    text = out.getvalue()
    assert "verdict: INCONCLUSIVE (no fault shown, none ruled out" in text
    assert "because: throughput sank 26.0%" in text


def test_interrupted_is_incomplete_and_device_errors_fail() -> None:
    cfg = SoakConfig(minutes=10)
    stopped = judge(_raw(STEADY, [], interrupted=True), cfg, None)
    assert stopped.verdict == "incomplete" and stopped.interrupted
    gpu = GpuSummary(index=0, name="H100", ecc_uncorrected=2, xid_errors=[79])
    monitor = MonitorSummary(window="w", interval_s=0.1, samples=10, seconds=1.0, gpus=[gpu])
    broken = judge(_raw(STEADY, STEADY), cfg, monitor)
    assert broken.verdict == "fail"
    assert any("uncorrected ECC" in r for r in broken.reasons)
    assert any("XID" in r for r in broken.reasons)


def test_verdict_thresholds_are_the_issues() -> None:
    assert verdict_for(0.2) == "input-bound (highly)"
    assert verdict_for(0.05) == "input-bound (moderately)"
    assert verdict_for(0.0499) == "device-bound"


def test_the_mixed_precisions_offered_and_why_the_others_are_not() -> None:
    """On either backend's device (both carry the compute capability)."""
    from gpuscout.diagnose.ablations import precisions as _precisions
    from gpuscout.measure.environment import cpu_has_native_bf16

    def on(kind: str, cc: tuple[int, int] | None) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, name=f"{kind}:0", compute_capability=cc)

    [(policy, why_not)] = _precisions(on("CPU", None), "fp32")  # this machine's own CPU
    assert policy == "mixed_bfloat16"
    if cpu_has_native_bf16():
        assert why_not is None
    else:
        assert why_not == (
            "this CPU has no bfloat16 arithmetic (AVX512-BF16 or AMX): "
            "it would be emulated, slower than fp32"
        )
    assert _precisions(on("GPU", (6, 1)), "fp32") == [
        ("mixed_float16", "compute capability (6, 1) has no tensor cores")
    ]
    assert _precisions(on("GPU", (7, 5)), "fp32") == [
        ("mixed_float16", None),
        ("mixed_bfloat16", "bfloat16 needs compute capability 8.0+"),
    ]
    assert _precisions(on("GPU", (9, 0)), "mixed_bfloat16") == [
        ("mixed_bfloat16", "the baseline already uses it")
    ]
