"""The doctor's run in the measuring child, for every backend: the pipeline analysis, then
every fix in turn, then the fixes that helped, together.

A backend calls :func:`run_ablations` with its target (``measure/backends/<name>/doctor.py``)
and its :class:`~gpuscout.diagnose.fixes.FixSet`; the request was checked by
``gpuscout.diagnose.doctor`` without any framework. Nothing is assumed: a fix's speedup is the
ratio of two measured means, each timed under ``bench``'s protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpuscout.core.errors import is_oom
from gpuscout.diagnose.analysis import analyse, helped, measured_fix, rank, skipped
from gpuscout.diagnose.doctor import WINDOW_LABELS
from gpuscout.diagnose.fixes import FixSet
from gpuscout.diagnose.records import DoctorConfig, DoctorReport, Fix, Timing
from gpuscout.diagnose.trials import TargetBase, Trial
from gpuscout.measure.batch_search import largest_fitting
from gpuscout.measure.pipelines import Knobs


def run_ablations(
    target: TargetBase,
    config: DoctorConfig,
    fixes_of: FixSet,
    emit: Callable[[dict[str, Any]], None],
) -> DoctorReport:
    """Measure the analysis and every fix not skipped on ``target``; the report."""

    def phase(text: str) -> None:
        emit({"phase": text})

    xla = config.xla or fixes_of.xla_always is not None
    base = Trial(Knobs(), config.precision, xla, target.batch)
    phase("timing the data pipeline alone")
    emit({"window": "start", "label": WINDOW_LABELS["data"]})
    data = target.data_alone(base)
    emit({"window": "end", "label": WINDOW_LABELS["data"]})
    base = replace(base, batch=target.batch)
    phase("timing the step alone, on data already on the device")
    step = target.step_alone(base)
    phase("timing the baseline training loop")
    emit({"window": "start", "label": WINDOW_LABELS["together"]})
    baseline = target.loop("baseline", base)
    emit({"window": "end", "label": WINDOW_LABELS["together"]})
    analysis = analyse(data, step, baseline)
    fixes: list[Fix] = []
    tried: dict[str, Trial] = {}
    code = fixes_of.code

    def attempt(
        name: str, trial: Trial, code: str, note: str = "", in_baseline: bool = False
    ) -> None:
        phase(f"trying: {name}")
        try:
            timed: Timing = target.loop(name, trial)
        except Exception as exc:
            why = "out of memory" if is_oom(exc) else f"{type(exc).__name__}"
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            fixes.append(
                Fix(name=name, speedup=None, status="failed", code=code, note=f"{why}: {first}")
            )
            return
        how = [n for n in target.last_notes if n not in target.pipeline_notes]
        note = "; ".join(n for n in (note, *how) if n)  # e.g. how gpuscout applied it
        fixes.append(measured_fix(name, baseline, timed, code, note, in_baseline))
        tried[name] = trial

    wanted = [f for f in fixes_of.names if f not in config.skip]
    if "prefetch" in wanted:
        attempt("prefetch", replace(base, knobs=Knobs(prefetch=True)), code["prefetch"])
    if "parallel map" in wanted:
        if target.has_map:
            attempt("parallel map", replace(base, knobs=Knobs(parallel=True)), code["parallel map"])
            if fixes[-1].speedup is not None and fixes[-1].speedup < 1.05:
                said = "; ".join(n for n in (fixes_of.gil_note, fixes[-1].note) if n)
                fixes[-1] = fixes[-1].model_copy(update={"note": said})
        else:
            why = target.no_parallel or "the pipeline has no per-sample map to parallelise"
            fixes.append(skipped("parallel map", code["parallel map"], why))
    if "cache" in wanted:
        if target.no_cache is None:
            attempt(
                "cache",
                replace(base, knobs=Knobs(cache=True)),
                code["cache"],
                "measured after the first epoch filled the cache; valid only if preprocessing is "
                "deterministic and the data fits in memory",
            )
        else:
            fixes.append(skipped("cache", code["cache"], target.no_cache))
    if "mixed precision" in wanted:
        for policy, why_not in precisions(target.device, config.precision):
            if why_not:
                fixes.append(skipped(f"mixed precision ({policy})", code.get(policy, ""), why_not))
            else:
                attempt(
                    f"mixed precision ({policy})",
                    replace(base, precision=policy),
                    code[policy],
                    "changes the numerics: check that accuracy holds",
                )
    if "XLA" in wanted:
        if "XLA" in fixes_of.not_tried:
            fixes.append(skipped("XLA", code.get("XLA", ""), fixes_of.not_tried["XLA"]))
        elif fixes_of.xla_always or config.xla:
            why = fixes_of.xla_always or "the baseline already compiles with XLA"
            fixes.append(skipped("XLA", code.get("XLA", ""), why))
        else:
            attempt("XLA", replace(base, xla=True), code["XLA"])
    if fixes_of.compiled in fixes_of.not_tried and fixes_of.compiled in wanted:
        why = fixes_of.not_tried[fixes_of.compiled]
        fixes.append(skipped(fixes_of.compiled, code[fixes_of.compiled], why))
    elif fixes_of.compiled in wanted:
        attempt(
            fixes_of.compiled,
            replace(base, graph=False),
            code[fixes_of.compiled],
            f"gpuscout's baseline already runs the step as a {fixes_of.compiled} (as model.fit "
            "does): this is what a loop that runs eagerly gains",
            in_baseline=True,
        )
    largest: int | None = None
    search: list[tuple[int, bool]] = []
    if "batch size" in wanted:
        phase("searching for the largest batch that fits")
        limit = config.max_batch or 8 * base.batch
        if target.max_batch:
            limit = min(limit, target.max_batch)
        largest, search = largest_fitting(
            lambda b: target.fits(replace(base, batch=b)), base.batch, limit
        )
        bound = f"searched up to {limit}; change with --max-batch"
        if largest and largest > base.batch:
            attempt(
                f"batch size {largest}",
                replace(base, batch=largest),
                fixes_of.batch_code.format(batch=largest, bound=bound),
                "a larger batch changes the optimisation: scale the learning rate (linear rule "
                "with warm-up) and check accuracy",
            )
        else:
            fixes.append(skipped("batch size", "", f"no larger batch fits ({bound})"))
    ranked = rank(fixes)
    combined = _combine(target, base, baseline, ranked, tried, phase)
    return DoctorReport(
        workload=target.name,
        device=target.device.name,
        device_name=target.device.description,
        batch_size=base.batch,
        baseline=baseline,
        analysis=analysis,
        fixes=ranked,
        combined=combined,
        largest_batch=largest,
        batch_search=search,
        assumptions=[*target.notes, *target.pipeline_notes, *_method_notes(config, base, fixes_of)],
    )


def precisions(device: Any, baseline: str) -> list[tuple[str, str | None]]:
    """(policy, why it is not tried) for the mixed precisions this device could use."""
    from gpuscout.measure.environment import cpu_has_native_bf16

    if baseline != "fp32":
        return [(baseline, "the baseline already uses it")]
    if device.kind == "CPU":
        if cpu_has_native_bf16():
            return [("mixed_bfloat16", None)]
        return [
            (
                "mixed_bfloat16",
                "this CPU has no bfloat16 arithmetic (AVX512-BF16 or AMX): "
                "it would be emulated, slower than fp32",
            )
        ]
    cc = device.compute_capability or (0, 0)
    if cc < (7, 0):
        return [("mixed_float16", f"compute capability {cc} has no tensor cores")]
    out: list[tuple[str, str | None]] = [("mixed_float16", None)]
    out.append(
        ("mixed_bfloat16", None if cc >= (8, 0) else "bfloat16 needs compute capability 8.0+")
    )
    return out


def _combine(
    target: TargetBase,
    base: Trial,
    baseline: Timing,
    ranked: list[Fix],
    tried: dict[str, Trial],
    phase: Callable[[str], None],
) -> Fix | None:
    """The fixes that helped (except the compiled step, already on), measured together."""
    good = [f for f in ranked if helped(f) and f.name in tried and not f.in_baseline]
    if len(good) < 2:
        return None
    precisions = [f for f in good if f.name.startswith("mixed precision")]
    knobs = Knobs(
        prefetch=any(f.name == "prefetch" for f in good),
        parallel=any(f.name == "parallel map" for f in good),
        cache=any(f.name == "cache" for f in good),
    )
    batches = [tried[f.name].batch for f in good if f.name.startswith("batch size")]
    trial = replace(
        base,
        knobs=knobs,
        precision=tried[precisions[0].name].precision if precisions else base.precision,
        xla=base.xla or any(f.name == "XLA" for f in good),
        batch=batches[0] if batches else base.batch,
    )
    # Two mixed precisions cannot be combined: the better one (ranked first) is kept.
    names = [
        f.name
        for f in good
        if not (f.name.startswith("mixed precision") and precisions and f is not precisions[0])
    ]
    name = " + ".join(names)
    phase(f"trying together: {name}")
    try:
        timed = target.loop(name, trial)
    except Exception as exc:
        return Fix(
            name=name,
            speedup=None,
            status="failed",
            code="",
            note=str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__,
        )
    code = "\n".join(f.code for f in good if f.name in names)
    return measured_fix(name, baseline, timed, code, "the fixes that helped, applied together")


def _method_notes(config: DoctorConfig, base: Trial, fixes_of: FixSet) -> list[str]:
    per = (
        f"{config.steps} steps after 2 warm-up steps"
        if config.steps
        else f"warm-up detected and dropped, then {config.seconds:g} s measured (--seconds)"
    )
    return [
        f"each measurement: {per}; the mean time per step is compared (input pipelines make "
        "steps bursty, and a run pays the total)",
        f"baseline: {base.precision}, XLA {'on' if base.xla else 'off'}, "
        f"{fixes_of.step_words}, batch {base.batch}, the pipeline as given (no prefetch, "
        "parallel map or cache added)",
        "speedup = the baseline's time per sample / the fix's, each alone on the baseline; its "
        "range comes from the two means' 95% intervals (from blocks of consecutive steps; a "
        "lower end below the fastest step measured is raised to it)",
        "input wait = 1 - (step on device-resident data) / (step in the training loop); "
        ">= 20% highly input-bound, >= 5% moderately",
    ]
