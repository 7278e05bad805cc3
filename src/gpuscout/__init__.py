"""gpuscout: which GPU to train on, from measurement and physics.

The library behind the ``gpuscout`` command; every command is a thin wrapper over a function
here. Names are imported lazily, so ``import gpuscout`` (and ``gpuscout --help``) stays fast
and never imports TensorFlow.
"""

from __future__ import annotations

from gpuscout.core.lazy import lazy_getattr

_EXPORTS = {
    "SCHEMA_VERSION": "gpuscout.core.records",
    "BenchConfig": "gpuscout.core.records",
    "DoctorConfig": "gpuscout.diagnose.records",
    "GpuscoutError": "gpuscout.core.errors",
    "RunResult": "gpuscout.core.records",
    "SoakConfig": "gpuscout.diagnose.records",
    "Store": "gpuscout.store",
    "UserError": "gpuscout.core.errors",
    "bench": "gpuscout.measure.benchmark",
    "build_report": "gpuscout.report.document",
    "render_html": "gpuscout.report.html",
    "render_markdown": "gpuscout.report.markdown",
    "scout": "gpuscout.scout",
    "ScoutPlan": "gpuscout.scout",
    "diagnose": "gpuscout.diagnose.doctor",
    "launch": "gpuscout.scale.launch",
    "load_catalog": "gpuscout.catalog",
    "scaling_sweep": "gpuscout.scale.sweep",
    "soak": "gpuscout.diagnose.soak",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
