"""Terminal tables for a benchmark result and for the list of stored runs (rich)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gpuscout.core.records import Distribution, Energy, RunResult, on_backend
from gpuscout.core.text import printable
from gpuscout.core.units import fmt_bytes, fmt_flops, fmt_percent, fmt_rate, fmt_seconds, fmt_sig
from gpuscout.measure import peaks
from gpuscout.predict.hlo import is_lower_bound
from gpuscout.report.monitor_rows import monitor_rows
from gpuscout.workloads import run_shape

if TYPE_CHECKING:  # the store pulls in SQLAlchemy: import it only for type checking
    from gpuscout.store import RunRow


def _interval(result: RunResult) -> str:
    sps = result.samples_per_second
    assert sps is not None
    if sps.ci_low is None or sps.ci_high is None:
        return f"{fmt_rate(sps.median)} (interval undefined: too few steps)"
    return f"{fmt_rate(sps.median)}  [95% CI {fmt_rate(sps.ci_low)} - {fmt_rate(sps.ci_high)}]"


def flops_rows(result: RunResult) -> list[tuple[str, str]]:
    """The achieved FLOP/s and MFU rows. FLOPs counted with a loop of unknown trip count
    are a lower bound, and so said ("at least"); an MFU that rounds to 0.0 % reads "< 0.1 %",
    and one that could not be counted "unknown", never 0 %."""
    at_least = "at least " if is_lower_bound(result.flops_method) else ""
    rows = []
    if result.tflops is not None:
        rows.append(("achieved", at_least + fmt_flops(result.tflops * 1e12)))
    if result.peak_tflops is None:
        return rows
    peak = fmt_flops(result.peak_tflops * 1e12)
    if result.mfu is None:
        if result.status == "ok":
            rows.append(("MFU", f"unknown (this step's FLOPs were not counted) of {peak}"))
        return rows
    share = fmt_percent(result.mfu) if result.mfu >= 0.0005 else "< 0.1%"
    note = " (its FLOPs are a lower bound: a loop's trip count is unknown)" if at_least else ""
    if peaks.is_estimate(result.peak_source):  # a CPU's peak: measured, never above 100 %
        note += f" ({peaks.ESTIMATE})"
        if result.mfu >= 1:
            rows.append(("MFU", f"{peaks.PEAK_MEASURED_LOW} ({peak}){note}"))
            return rows
    rows.append(("MFU", f"{at_least}{share} of {peak}{note}"))
    return rows


def result_table(result: RunResult) -> Table:
    """The summary of one run: speed with its interval, then how it was measured."""
    title = f"gpuscout bench · run {result.id} · {result.workload} on {result.device}"
    table = Table(title=Text(printable(title)), show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    _plain(table, "status", result.status)
    if result.note:
        _plain(table, "note", result.note)
    if result.status != "ok":
        _plain(table, "message", result.message or "")
        return table
    # An imported run (a file someone made) may lack what gpuscout's own runs always carry:
    # each missing part is said, never assumed (issue 43; it ended in an AssertionError).
    st = result.step_time_s
    tokens, shape = run_shape(result.workload, result.config.dims)
    if result.samples_per_second is None:  # ScoutCallback without batch_size: steps only
        steps = f": {fmt_rate(1 / st.median)} steps/s" if st is not None else ""
        _plain(table, "samples/s", f"not measured (no batch size given){steps}")
    else:
        _plain(table, "samples/s (median)", _interval(result))
        mean = result.mean_samples_per_second
        _plain(table, "samples/s (mean rate)", fmt_rate(mean) if mean else "not recorded")
        if tokens:
            sps = result.samples_per_second
            _plain(table, "tokens/s (median)", f"{fmt_rate(sps.median * tokens)} ({tokens:,} a "
                   "sample: every position is trained on)")  # fmt: skip
    _plain(
        table,
        "step time",
        f"median {fmt_seconds(st.median)} · p5 {fmt_seconds(st.p5)} · p95 {fmt_seconds(st.p95)}"
        if st is not None
        else "not recorded in this run",
    )
    _plain(
        table,
        "spread",
        f"CV {fmt_percent(result.cv or 0)} · {_steps(result.outliers or 0)} flagged as "
        "outliers (MAD)",
    )
    w = result.warmup
    warmup = f"{_steps(w.steps)}, {fmt_seconds(w.seconds)} ({w.method})" if w else None
    _plain(table, "warm-up", warmup or "not recorded in this run")
    half = result.ci_rel_halfwidth
    _plain(
        table,
        "measured",
        f"{_steps(result.measured_steps)} · stopped: {result.stop_reason or 'not recorded'}"
        + (f" (interval ±{fmt_percent(half)})" if half is not None else ""),
    )
    _plain(
        table,
        "settings",
        f"batch {result.batch_size or 'not given'} · {result.precision} · "
        + (
            f"torch.compile {'on' if result.config.compile else 'off'}"
            if result.backend == "torch"
            else f"XLA {'on' if result.xla else 'off'}"
        )
        + (" · channels_last" if result.config.channels_last else "")
        + f" · loop {result.loop}"
        + (f" · {shape}" if shape else ""),
    )
    if result.distribution is not None:
        step = result.step_time_s.median if result.step_time_s else None
        for label, text in distribution_rows(result.distribution, step):
            _plain(table, label, text)
    if result.epoch_seconds is not None:
        _plain(
            table,
            "epoch time",
            f"{fmt_seconds(result.epoch_seconds)} ({result.epoch_samples:,} {result.epoch_unit})",
        )
    for label, text in flops_rows(result):
        _plain(table, label, text)
    if result.peak_memory_bytes is not None:
        _plain(table, "peak memory", fmt_bytes(result.peak_memory_bytes))
    elif (result.memory_method or "").startswith("not measured"):  # said, not left out
        _plain(table, "peak memory", result.memory_method or "")
    if result.energy is not None:
        _plain(table, "energy", energy_text(result.energy))
    env = result.env
    _plain(
        table,
        "software",
        f"{framework(env)}"
        + (  # a plain PyTorch model runs without Keras
            " · no Keras"
            if result.backend == "torch" and not env.get("keras")
            else f" · Keras {env.get('keras')}"
        )
        + f" · Python {env.get('python')}",
    )
    _plain(table, "device", f"{env.get('device_name')} ({env.get('cpu_cores')} CPU cores)")
    if result.monitor is not None:
        for label, text in monitor_rows(result.monitor):
            _plain(table, label, text)
    return table


def energy_text(e: Energy) -> str:
    """Joules per sample and samples per joule (per token too, where the run has tokens), the
    source and the window; or "not reported" and why: a missing figure is never left blank."""
    if e.source is None or e.joules is None:
        return f"not reported ({e.reason or 'no reason recorded'})"
    parts = []
    if e.joules_per_sample:
        rate = fmt_rate(1 / e.joules_per_sample)
        parts.append(f"{joules(e.joules_per_sample)} per sample ({rate} samples/J)")
    if e.joules_per_token:
        rate = fmt_rate(1 / e.joules_per_token)
        parts.append(f"{joules(e.joules_per_token)} per token ({rate} tokens/J)")
    if not parts:  # no batch size (a ScoutCallback run told none), or nothing counted
        parts.append(f"{joules(e.joules_per_step or 0.0)} per step")
    text = " · ".join(parts) + f", from {e.source}"
    if e.seconds is not None:
        text += f" · {joules(e.joules)} over the measured {fmt_seconds(e.seconds)}"
    if len(e.devices) > 1:
        text += " (" + ", ".join(f"{d.device} {joules(d.joules)}" for d in e.devices) + ")"
    return text


def joules(value: float) -> str:
    """Energy with an SI prefix: 61.4 J, 512 mJ, 3.20 kJ."""
    for unit, size in (("MJ", 1e6), ("kJ", 1e3), ("J", 1.0), ("mJ", 1e-3)):
        if value >= size:
            return f"{fmt_sig(value / size)} {unit}"
    return f"{fmt_sig(value * 1e6)} µJ"


def distribution_rows(d: Distribution, step_s: float | None = None) -> list[tuple[str, str]]:
    """How a data-parallel run was spread, the network it saw (``step_s``: its measured
    median step), and each worker as it saw the run."""
    where = (
        f"{d.workers} workers x {', '.join(d.devices)}" if d.workers > 1 else ", ".join(d.devices)
    )
    rows = [
        (
            "data parallel",
            f"{d.strategy} · {d.replicas} replicas on {where}"
            + (" (logical CPU devices)" if d.logical_devices else ""),
        ),
        ("batch", f"{d.per_replica_batch} per replica · {d.global_batch} global"),
    ]
    if d.scaling is not None and d.scaling.efficiency is not None:
        e = d.scaling.efficiency
        ci = (
            f" [95% CI {fmt_percent(e.ci_low)} - {fmt_percent(e.ci_high)}]"
            if e.ci_low is not None and e.ci_high is not None
            else ""
        )
        rows.append(
            (
                "scaling efficiency",
                f"{fmt_percent(e.median)}{ci} against run {d.scaling.base_run_id} "
                f"({d.scaling.base_replicas} replica(s))",
            )
        )
    rows += network_rows(d, step_s)
    for w in d.worker_runs:
        speed = (
            f"{fmt_rate(w.samples_per_second)} samples/s as it saw it"
            if w.samples_per_second
            else ""
        )
        host = w.env.get("hostname") or w.address
        rows.append(
            (
                f"worker {w.task_index}",
                f"{w.address} · {w.status} · {speed or w.message or ''} · {host}, "
                f"{framework(w.env)}",
            )
        )
    return rows


def framework(env: dict[str, Any]) -> str:
    """The framework a run (or a worker) measured through, as its environment recorded it."""
    if env.get("torch"):
        return f"PyTorch {env['torch']}"
    return f"JAX {env['jax']}" if env.get("jax") else f"TensorFlow {env.get('tensorflow')}"


def network_rows(d: Distribution, step_s: float | None) -> list[tuple[str, str]]:
    """The all-reduce bandwidth a multi-worker run measured, and beside it the scaling
    model's all-reduce of the run's gradients at that bandwidth and its share of the measured
    step: why the run scaled as it did. Computed here, not when measuring: measure may not
    import predict."""
    bw, nbytes, took = d.allreduce_busbw_gb_per_s, d.allreduce_bytes, d.allreduce_s
    if not bw or nbytes is None or took is None:
        return []
    from gpuscout.predict.scaling import allreduce_seconds, constants

    rows = [
        (
            "network",
            f"{bw:.3g} GB/s bus bandwidth, as measured between these workers: an all-reduce "
            f"of {fmt_bytes(nbytes)} over {d.replicas} replicas took {fmt_seconds(took)} "
            "(median; busbw = 2(n-1)/n x bytes / time, as NCCL's)",
        )
    ]
    if d.gradient_bytes:
        predicted = allreduce_seconds(d.gradient_bytes, d.replicas, bw)
        share = (
            f", {fmt_percent(predicted / step_s)} of the measured {fmt_seconds(step_s)} step"
            if step_s
            else ""
        )
        rows.append(
            (
                "scaling model",
                f"at that bandwidth the gradients' all-reduce ({fmt_bytes(d.gradient_bytes)} "
                f"over {d.replicas} replicas) takes {fmt_seconds(predicted)}{share}; the "
                f"model hides up to {fmt_percent(constants().overlap)} of a one-GPU step of "
                "it behind the backward pass",
            )
        )
    return rows


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def print_result(result: RunResult, console: Console) -> None:
    if result.inference is not None:
        from gpuscout.report.latency_table import print_latency

        print_latency(result, console)
    else:
        console.print(result_table(result))
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(printable(warning))}")
    for notice in result.monitor.notices if result.monitor else []:
        console.print(Text(f"note: {printable(notice)}"))
    if result.assumptions:
        console.print("[bold]assumptions[/bold]")
        for note in result.assumptions:
            console.print(Text(f"  · {printable(note)}"))


def _plain(table: Table, *cells: str) -> None:
    """A row of text, never markup: names, paths and error messages are the user's or
    TensorFlow's, and "[/job:worker/...]" in one would otherwise break the table; control
    characters shown as escapes, so a stored ``\r\n`` or ESC cannot forge a line or a colour."""
    table.add_row(*(Text(printable(c)) for c in cells))


def runs_table(rows: Sequence[RunRow]) -> Table:
    table = Table(title="stored runs", title_justify="left")
    for name in ("id", "when (UTC)", "status", "workload", "device", "precision", "batch"):
        table.add_column(name)
    table.add_column("samples/s", justify="right")
    table.add_column("stopped")
    for r in rows:
        _plain(
            table,
            str(r.id),
            r.created_at.replace("T", " ")[:19],
            r.status,
            r.workload + (" (inference)" if r.mode == "inference" else ""),
            r.device,
            r.precision + (" +XLA" if r.xla else "") + on_backend(r.backend),
            str(r.batch_size) if r.batch_size else "-",  # 0: not given (ScoutCallback)
            fmt_rate(r.samples_per_second) if r.samples_per_second else "-",
            r.stop_reason or "-",
        )
    return table
