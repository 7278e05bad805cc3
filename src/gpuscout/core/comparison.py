"""Two runs side by side: may they be ranked, and by how much does one beat the other?

Following asv's ``compare``: runs that differ in what was measured (workload, its definition,
precision, batch) or in the software that ran it are *not comparable*, and are shown as such
instead of ranked. The device may differ: comparing devices is the point. So may the backend
(TensorFlow, JAX or PyTorch under the same Keras model): "which framework is faster here?" is a
question only that comparison answers. With it go what a backend brings: its own framework and CUDA
libraries, and XLA (every JAX step is compiled by it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuscout.core.records import Interval, RunResult
from gpuscout.core.run_settings import ran_with_tf32

SOFTWARE = ("tensorflow", "jax", "torch", "keras", "cuda", "cudnn")
# what comes with a backend, and so does not block a comparison of two backends
WITH_THE_BACKEND = ("tensorflow", "jax", "torch", "cuda", "cudnn", "XLA")


def ratio(num: Interval, den: Interval, scale: float = 1.0) -> Interval:
    """``num / den * scale`` with a 95% interval from the two independent intervals: their
    relative errors add in quadrature on a log scale, lower and upper sides apart."""
    median = num.median / den.median * scale
    if None in (num.ci_low, num.ci_high, den.ci_low, den.ci_high):
        return Interval(median=median, ci_low=None, ci_high=None)
    assert num.ci_low and num.ci_high and den.ci_low and den.ci_high
    down = math.hypot(math.log(num.median / num.ci_low), math.log(den.ci_high / den.median))
    up = math.hypot(math.log(num.ci_high / num.median), math.log(den.median / den.ci_low))
    return Interval(median=median, ci_low=median * math.exp(-down), ci_high=median * math.exp(up))


@dataclass(frozen=True)
class Difference:
    what: str
    a: str
    b: str
    blocks: bool  # makes the runs not comparable


@dataclass(frozen=True)
class Comparison:
    a: RunResult
    b: RunResult
    differences: list[Difference] = field(default_factory=list)
    speedup: Interval | None = None  # b's samples/s over a's; None when not comparable
    out_of_range: bool = False  # comparable, but the ratio is no finite number (a bogus speed)

    @property
    def comparable(self) -> bool:
        return not any(d.blocks for d in self.differences)

    @property
    def across_backends(self) -> bool:
        """The two runs were measured on different backends: that is what is compared."""
        return self.a.backend != self.b.backend


def compare(a: RunResult, b: RunResult) -> Comparison:
    """What differs between ``a`` and ``b``, and b's speed over a's where that means anything."""
    cross = a.backend != b.backend
    pairs: list[tuple[str, object, object, bool]] = [
        ("backend", a.backend, b.backend, False),
        ("status", a.status, b.status, True),
        ("mode", a.mode, b.mode, True),
        ("workload", a.workload, b.workload, True),
        ("workload definition", a.env.get("workload_hash"), b.env.get("workload_hash"), True),
        ("precision", a.precision, b.precision, True),
        (
            "batch per device",
            a.per_replica_batch or "not given",
            b.per_replica_batch or "not given",
            True,
        ),
        ("loop", a.loop, b.loop, True),
        ("XLA", a.xla, b.xla, not cross),
        # PyTorch's compiler and memory format: settings of the run, as XLA is
        ("torch.compile", _on(a.config.compile), _on(b.config.compile), not cross),
        ("channels_last", _on(a.config.channels_last), _on(b.config.channels_last), not cross),
        ("TF32", _tf32(a), _tf32(b), _tf32_matters(a) or _tf32_matters(b)),
        *(
            (name, a.env.get(name), b.env.get(name), not (cross and name in WITH_THE_BACKEND))
            for name in SOFTWARE
        ),
        (
            "device",
            a.env.get("device_name") or a.device,
            b.env.get("device_name") or b.device,
            False,
        ),
        ("strategy", _strategy(a), _strategy(b), False),
        ("replicas", a.replicas, b.replicas, False),
        ("host", a.env.get("hostname"), b.env.get("hostname"), False),
    ]
    differences = [
        Difference(what, _text(x), _text(y), blocks) for what, x, y, blocks in pairs if x != y
    ]
    result = Comparison(a, b, differences)
    if result.comparable and a.samples_per_second and b.samples_per_second:
        r: Interval | None
        try:
            r = ratio(b.samples_per_second, a.samples_per_second)
        except (OverflowError, ZeroDivisionError, ValueError):
            r = None  # an interval bound that overflows exp(): no finite ratio either
        if r is None or not _finite_positive(r.median):  # 1e308 over 1e-3: never shown
            return Comparison(a, b, differences, None, out_of_range=True)
        if not (_finite_positive(r.ci_low) and _finite_positive(r.ci_high)):
            r = Interval(median=r.median, ci_low=None, ci_high=None)
        return Comparison(a, b, differences, r)
    return result


def _finite_positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def _tf32(run: RunResult) -> str:
    """The run's TF32 switch (see ran_with_tf32: runs from before the setting read as on)."""
    return "on" if ran_with_tf32(run.env, run.config.tf32) else "off"


def _tf32_matters(run: RunResult) -> bool:
    """Whether the switch can have changed what ``run`` measured: float32 matmuls on a GPU
    with TF32 tensor cores (compute capability 8.0+, or not recorded). Otherwise a TF32
    difference is listed but does not make two runs incomparable: on a CPU it changes nothing.
    """
    if run.precision != "fp32" or "GPU" not in run.device:
        return False
    cc = str(run.env.get("compute_capability") or "")
    try:
        return tuple(int(n) for n in cc.split(".")) >= (8, 0) if cc else True
    except ValueError:
        return True


def _on(setting: bool) -> str:
    return "on" if setting else "off"


def _strategy(run: RunResult) -> str:
    return run.distribution.strategy if run.distribution else "none"


def _text(value: object) -> str:
    return "-" if value is None else str(value)
