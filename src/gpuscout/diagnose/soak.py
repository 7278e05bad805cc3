"""``soak``: does training stay fast and correct for a long run? A verdict, and the evidence.

:func:`soak` is the public entry: it runs the loop (``measure/soak_loop``, on the backend's
step) in a measuring child while the parent's monitor watches the devices, then :func:`judge`
weighs what both saw. The verdict fails on what ruins a long run: a NaN/Inf loss, an out-of-
memory or other crash, uncorrected ECC or XID errors, or throughput shown to have sunk by more
than ``max_drift`` between the first and the last window. Throttling is evidence, not by itself
a failure: it fails the run only through the throughput it costs.

The drift is judged against the machine's own noise (:func:`drift_verdict`): a pass needs the
data to rule out a drop beyond ``max_drift``, a failure needs them to show one, and anything
between is *inconclusive*, never a pass: a 26 % drop on a machine whose windows wander by 15 %
is neither a fault shown nor a fault ruled out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from gpuscout.core.records import (
    Interval,
    MonitorSummary,
    RunResult,
    StepTimes,
    Warmup,
)
from gpuscout.core.units import fmt_rate, fmt_seconds
from gpuscout.diagnose.analysis import timing_of
from gpuscout.diagnose.records import SoakConfig, SoakReport, Timing
from gpuscout.measure.benchmark import check
from gpuscout.measure.loss_check import DIVERGED, nonfinite_text
from gpuscout.measure.monitor_warnings import monitor_warnings
from gpuscout.measure.runner import STALL_S, run_child
from gpuscout.measure.stats import summarize

# The margin on the drift: 3x one window's noise. The drift is the difference of two windows,
# whose standard error is sqrt(2)x the noise, so this is ~2.1 standard errors (~98 % one-sided).
NOISE_Z = 3.0
LONGEST_WINDOW_MIN = 100.0  # soak_loop's windows stop growing (at 10 min) past this run length
DriftVerdict = Literal["pass", "fail", "inconclusive"]


def soak(
    config: SoakConfig,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    stall_s: float = STALL_S,
) -> tuple[SoakReport, RunResult]:
    """Soak-test ``config``; the report and the run to store (also when interrupted)."""
    check(config.bench_config())

    def relay(message: dict[str, Any]) -> None:
        if on_progress:
            on_progress(message)

    run = run_child(
        "soak", config.model_dump(mode="json"), config.device, relay, stall_s, "soaking"
    )
    if run.monitor is not None:
        run.monitor.stop()
    monitor = run.monitor.summary() if run.monitor else None
    final = run.final
    if "user_error" in final:
        from gpuscout.core.errors import UserError

        raise UserError(final["user_error"], final.get("fix"))
    raw = final.get("report") or {
        "workload": config.model or config.workload,
        "device": config.device or "default",
        "device_name": "",
        "batch_size": config.batch_size or 0,
        "seconds": 0.0,
        "steps": 0,
        "error": final.get("error") or run.failure,
        "interrupted": run.interrupted,
    }
    report = judge(raw, config, monitor)
    result = _as_run(
        report, raw, config, monitor, run.monitor.timeline_columns() if run.monitor else {}
    )
    return report, result


def _window(label: str, times: list[float], batch: int) -> Timing | None:
    return timing_of(label, times, batch) if len(times) >= 2 else None


def window_noise(blocks: list[list[float]], window_s: float) -> float | None:
    """How much throughput moves between neighbouring window-long stretches by itself.

    The run's 1-second blocks are grouped into window-long chunks; the robust spread (MAD) of
    successive chunks' relative differences, / sqrt(2), is the noise of one chunk's throughput.
    Differences, not the spread itself, so a steady drift barely counts as noise and one sudden
    drop not at all. None with fewer than 4 chunks.
    """
    chunks: list[tuple[int, float]] = []
    start, steps, busy = None, 0, 0.0
    for end, n, seconds in blocks:
        start = end if start is None else start
        steps, busy = steps + int(n), busy + float(seconds)
        if end - start >= window_s * 0.999:
            chunks.append((steps, busy))
            start, steps, busy = None, 0, 0.0
    rates = np.array([n / b for n, b in chunks if b > 0])
    if len(rates) < 4:
        return None
    d = np.diff(rates) / rates.mean()
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


def drift_verdict(
    drift: float, noise: float | None, max_drift: float, minutes: float
) -> tuple[DriftVerdict, str]:
    """Whether the data show a drop beyond ``max_drift``, rule it out, or do neither; and why.

    ``drift``: last window's throughput over the first's, - 1; ``noise``: one window's relative
    throughput noise (:func:`window_noise`), None where too few windows measured it. The change
    is known to +- ``NOISE_Z`` x noise: FAIL when even its upper end is a drop beyond
    ``max_drift``, PASS when even its lower end is not, INCONCLUSIVE otherwise, saying what
    would decide it. Unmeasured noise decides nothing: a pass needs the noise to be known.
    """
    limit_pct = f"{max_drift * 100:.3g}%"  # 0.025: 2.5%, not 2%
    limit = f"the {limit_pct} drop tested for (--max-drift)"
    if noise is None:
        longer = max(1.0, 2.0 * minutes)
        return "inconclusive", (
            f"throughput changed {drift:+.1%} from the first window to the last, but the run "
            "was too short to measure this machine's window-to-window noise (4 windows at "
            f"least), so it cannot rule out {limit}: soak longer, e.g. --minutes {longer:g}"
        )
    margin = NOISE_Z * noise
    if drift + margin < -max_drift:
        return "fail", (
            f"throughput sank {-drift:.1%} from the first window to the last, beyond {limit} "
            f"even allowing for this machine's noise (+-{margin:.1%}): throttling, memory "
            "fragmentation or a leak"
        )
    if drift - margin > -max_drift:
        return "pass", (
            f"a drop beyond {limit_pct} is ruled out: {drift:+.1%} +- {margin:.1%} "
            f"(3 x the noise) stays above -{limit_pct}"
        )
    # The noise a decision needs: the margin must shrink to the drift's distance from the
    # limit. A window's noise falls as the square root of its length if the steps' jitter is
    # random, and the windows grow with the run (10 % of it) up to LONGEST_WINDOW_MIN.
    needed = abs(drift + max_drift) / NOISE_Z
    quieter = f"a machine nothing else runs on (noise below +-{needed:.1%})"
    longer = minutes * (noise / needed) ** 2 if needed > 0 else math.inf
    decide = (
        f"soak about {math.ceil(longer):,} minutes (--minutes {math.ceil(longer)}: longer "
        f"windows average the noise down, if it is random) or on {quieter}"
        if longer <= LONGEST_WINDOW_MIN
        else f"a longer soak alone will not (the windows stop growing at 10 min): soak on {quieter}"
    )
    noisy = f"this machine's noise (+-{noise:.1%} a window, +-{margin:.1%} on the change)"
    if drift < -max_drift:
        seen = (
            f"throughput sank {-drift:.1%} from the first window to the last, beyond the "
            f"{limit_pct} tested for, but {noisy} could make a drop within it look that large"
        )
    else:
        seen = (
            f"throughput changed {drift:+.1%} from the first window to the last, but {noisy} "
            f"could hide {limit}"
        )
    return "inconclusive", f"{seen}: to decide, {decide}"


def judge(raw: dict[str, Any], config: SoakConfig, monitor: MonitorSummary | None) -> SoakReport:
    """The verdict, its reasons and every check's evidence, from the loop and the monitor."""
    batch = int(raw.get("batch_size") or 0)
    first = _window("first window", raw.get("first_times", []), batch)
    last = _window("last window", raw.get("last_times", []), batch)
    reasons: list[str] = []
    evidence: list[str] = []
    steps, seconds = int(raw.get("steps", 0)), float(raw.get("seconds", 0.0))
    planned = 60.0 * config.minutes
    evidence.append(f"ran {fmt_seconds(seconds)} of {fmt_seconds(planned)}: {steps:,} steps")
    if raw.get("error"):
        reasons.append(f"the run failed: {raw['error']}")
    bad = int(raw.get("bad_losses", 0))
    if bad:
        reasons.append(nonfinite_text(None, raw.get("first_bad_step")))
    elif steps:
        evidence.append(f"loss finite at every one of {steps:,} steps")
    if raw.get("broken_weights"):
        reasons.append(str(raw["broken_weights"]))
    drift = noise = undecided = None
    if first and last:
        drift = first.mean_s / last.mean_s - 1.0  # > 0: faster at the end
        noise = window_noise(raw.get("blocks", []), float(raw.get("window_seconds", 0.0)))
        noise_text = (
            f"; window-to-window noise +-{noise:.1%}, so +-{NOISE_Z * noise:.1%} on the change"
            if noise is not None
            else "; window-to-window noise not measured"
        )
        evidence.append(
            f"throughput: first window {fmt_rate(first.samples_per_second)}/s, last window "
            f"{fmt_rate(last.samples_per_second)}/s ({drift:+.1%}{noise_text})"
        )
        found, text = drift_verdict(drift, noise, config.max_drift, config.minutes)
        if found == "fail":
            reasons.append(text)
        elif found == "pass":
            evidence.append(text)
        else:
            undecided = text
    else:
        evidence.append("throughput drift: not measured (too short for a first and a last window)")
    if monitor is not None:
        for g in monitor.gpus:
            if g.ecc_uncorrected:
                reasons.append(f"GPU {g.index}: {g.ecc_uncorrected} uncorrected ECC error(s)")
            if g.xid_errors:
                reasons.append(f"GPU {g.index}: XID error(s) {sorted(set(g.xid_errors))}")
            if g.lost:
                reasons.append(f"GPU {g.index}: lost during the soak (NVML: GPU is lost)")
            evidence.append(
                f"GPU {g.index}: max {g.temperature_max_c or 0:.0f} °C, SM clock min "
                f"{g.sm_clock_min_mhz or 0:.0f} / mean {g.sm_clock_mean_mhz or 0:.0f} MHz, clock "
                f"events: {', '.join(g.clock_events) or 'none'}, ECC uncorrected "
                f"{g.ecc_uncorrected if g.ecc_uncorrected is not None else 'not readable'}, "
                f"XID {'none' if not g.xid_errors else g.xid_errors}"
            )
        evidence += [f"warning: {w}" for w in monitor_warnings(monitor)]
        evidence += [f"{n} (throttling, ECC and XID not checked)" for n in monitor.notices]
    interrupted = bool(raw.get("interrupted"))
    verdict: Literal["pass", "fail", "inconclusive", "incomplete"]
    if reasons:
        verdict = "fail"
        evidence += [f"drift: {undecided}"] if undecided else []
    elif interrupted or first is None or last is None:
        verdict = "incomplete"
        reasons.append(
            "interrupted before the end" if interrupted else "too short to compare windows"
        )
    elif undecided:
        verdict = "inconclusive"
        reasons.append(undecided)
    else:
        verdict = "pass"
    return SoakReport(
        workload=str(raw.get("workload", config.workload)),
        device=str(raw.get("device", "")),
        device_name=str(raw.get("device_name", "")),
        batch_size=batch,
        verdict=verdict,
        reasons=reasons,
        evidence=evidence,
        seconds=seconds,
        steps=steps,
        first_window=first,
        last_window=last,
        drift=drift,
        noise=noise,
        bad_losses=bad,
        first_bad_step=raw.get("first_bad_step"),
        error=raw.get("error"),
        interrupted=interrupted,
        monitor=monitor,
    )


def _as_run(
    report: SoakReport,
    raw: dict[str, Any],
    config: SoakConfig,
    monitor: MonitorSummary | None,
    timeline: dict[str, list[float | None]],
) -> RunResult:
    """The soak as a stored run: its steady-state speed, with the soak report beside it."""
    kept = [*raw.get("first_times", []), *raw.get("last_times", [])]
    broken = report.bad_losses or raw.get("broken_weights")  # timed, but no benchmark
    base: dict[str, Any] = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "status": (DIVERGED if broken else "ok")
        if kept and not report.error
        else ("oom" if "memory" in (report.error or "") else "error"),
        "message": "; ".join(report.reasons) or None,
        "workload": report.workload,
        "device": report.device or "default",
        "precision": config.precision,
        "xla": config.bench_config().xla,
        "loop": "custom",
        "backend": config.backend,
        "batch_size": report.batch_size,
        "stop_reason": f"soak: {report.verdict}",
        "measured_steps": len(kept),
        "warnings": [
            e.removeprefix("warning: ") for e in report.evidence if e.startswith("warning: ")
        ],
        "assumptions": [
            *raw.get("assumptions", []),
            "soak: step times kept for the first and last windows only; every loss checked",
        ],
        "config": config.bench_config(),
        "monitor": monitor,
        "soak": report.model_dump(mode="json"),
    }
    if kept and report.batch_size:
        s = summarize(kept)
        b = report.batch_size
        warm = raw.get("warmup_times", [])
        base |= {
            "warmup": Warmup(steps=len(warm), seconds=float(sum(warm)), method="detected"),
            "samples_per_second": Interval(
                median=b / s.median, ci_low=b / s.ci_high, ci_high=b / s.ci_low
            ),
            "mean_samples_per_second": b / s.mean,
            "step_time_s": StepTimes(median=s.median, p5=s.p5, p95=s.p95, mean=s.mean),
            "cv": s.cv,
            "outliers": s.outliers,
        }
    result = RunResult.model_validate(base)
    return result.model_copy(
        update={"step_times_s": [*raw.get("warmup_times", []), *kept], "monitor_timeline": timeline}
    )
